"""DEBUG RELOAD in the model, for ``xspec serve --checked`` (the persistence DEBUG subcommands).

``DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`` saves the RDB file (RDB-1: the data as of now, in the
dialect's RDB version, RDB-3/RDB-4), empties the data and loads the file back: what the file does
not keep is lost (6.2's version 9 has no entries-read), the changes counter is zero (STATS-4) and the
reply is ``OK``. An unknown option is refused before anything happens. Forms that load a file the
model did not write (NOSAVE), or that load on top of the data (NOFLUSH), are refused as unmodelled.
``DEBUG LOADAOF`` (DEBUG-LOADAOF-1..3) empties the data and replays the AOF a lone server keeps
(:func:`track_aof`: with ``appendonly yes`` every command that propagated something is appended as
one unit, AOF-1), so what replaying loses (consumers' seen-times, a deleted entry's pending entry)
is lost here too.

Registered in front of :mod:`xspec.models.debug`'s DEBUG, which answers every other subcommand.
"""

from __future__ import annotations

import copy
from typing import Any

from xspec.models import debug as _plain_debug
from xspec.models.persistence import AppendOnlyFile, Snapshot, load_snapshot, take_snapshot
from xspec.models.server import AFTER_COMMAND, HANDLERS, Call, CommandError, HandlerResult, Outcome, Server
from xspec.spec.errors import config_invalid_argument, config_set_failed
from xspec.spec.ids import c_string
from xspec.spec.resp import OK, Reply

RELOAD_OPTIONS = "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
_OTHER_DEBUG = HANDLERS["debug"]
assert _OTHER_DEBUG is _plain_debug.debug


def debug_reload(call: Call) -> Reply:
    flush = save = True
    for opt in call.argv[2:]:
        word = c_string(opt).lower()
        if word == b"noflush":
            flush = False
        elif word == b"nosave":
            save = False
        elif word != b"merge":
            raise CommandError(RELOAD_OPTIONS)
    if not save or not flush:
        raise CommandError("ERR xspec model: DEBUG RELOAD NOSAVE or NOFLUSH is not modelled")
    server = call.server
    snapshot = take_snapshot(server.dbs, server.dialect.rdb_version)  # RDB-1, RDB-4
    server.stats.saved()  # STATS-4: rdbSave zeroes the changes counter
    now = server.clock.now_ms()  # rdbLoad's own reading, not the command's snapshot (7.2+, Valkey)
    for db, loaded in zip(server.dbs, load_snapshot(snapshot), strict=True):
        db.clear()
        db.update(loaded)
        for key, when in list(getattr(db, "expires", {}).items()):
            if when < now:  # EXPIRE-KEYS-1: a primary loading an RDB file skips keys already expired
                del db[key]
    return OK


LONE = "self"
"""The name :func:`xspec.models.replication.node_of` gives a server on its own."""
LOADAOF_LEFT_OVER = "ERR xspec model: DEBUG LOADAOF of an AOF left after appendonly was turned off is not modelled"
LOADAOF_EXITS = "ERR xspec model: DEBUG LOADAOF without an AOF makes Redis exit (DEBUG-LOADAOF-3)"


def _lone_node(server: Server) -> Any:
    """The deployment node of a server on its own, or None for a node of a :class:`Deployment`
    (whose ``execute`` keeps its AOF itself)."""
    from xspec.models.replication import deployment_of, node_of
    node = node_of(server)
    return node if node.name == LONE and set(deployment_of(node).specs) == {LONE} else None


def track_aof(server: Server, client: Any, out: Outcome) -> None:
    """After each command of a lone server with ``appendonly yes``: its AOF (AOF-1). Turned on while
    running (CONFIG SET), the AOF starts with a rewrite of the data (AOF-5); at start it is empty."""
    from xspec.models.replication import AOF_CLIENT, deployment_of, setting
    if client.id == AOF_CLIENT or not server.debug_allowed():
        return  # only DEBUG LOADAOF reads this AOF: without DEBUG it is not kept
    if server.node is None:
        if server.config.get("appendonly") != "yes":
            return
    elif server.node.name != LONE:
        return  # a deployment's node: Deployment.execute keeps its AOF
    node = _lone_node(server)
    if node is None:
        return
    if setting(server, "appendonly") != "yes":
        if node.aof is not None:
            node.aof_stopped = True  # the file stays as it is on disk
        return
    deployment = deployment_of(node)
    if node.aof is None or getattr(node, "aof_stopped", False):
        started = node.aof is None and node.config.get("appendonly") == "yes"  # not CONFIG SET appendonly yes
        if node.aof is None and not started and node.rewrite_scheduled:
            return  # AOF-SCHEDULE-1: waiting for its first rewrite, whose base holds these writes
        node.aof_stopped = False
        if out.propagated or (started and server.dialect.aof_single_file):
            # the first command of a server started with appendonly yes: the base is empty
            empty: list[dict[bytes, Any]] = [{} for _ in server.dbs]
            # AOF-2; AOF-SINGLE-1: 6.2 starts with an empty file, no preamble
            preamble = setting(server, "aof-use-rdb-preamble") == "yes" and not server.dialect.aof_single_file
            node.aof = AppendOnlyFile(take_snapshot(empty, deployment._rdb_version(node)) if preamble else None)
        else:
            deployment.rewrite_aof(node)  # AOF-5: CONFIG SET appendonly yes rewrites the data now
            return
    deployment._append_aof(node, out.propagated, max(server.repl_db, 0))


def _empty_data(server: Server) -> None:
    """``emptyData``: every database flushed as FLUSHALL does, watchers and blocked readers told (FLUSH-3, FLUSH-4)."""
    from xspec.models.generic import flush_database
    for dbid in range(len(server.dbs)):
        flush_database(server, dbid)


def debug_loadaof(call: Call) -> Reply:
    """``DEBUG LOADAOF``: the AOF written out, the data emptied, the AOF replayed, the changes counter zeroed."""
    from xspec.models.replication import deployment_of, setting
    server = call.server
    node = _lone_node(server)
    if node is None:
        raise CommandError("ERR xspec model: DEBUG LOADAOF is modelled on a server on its own only")
    if setting(server, "appendonly") != "yes":
        if node.aof is not None:
            raise CommandError(LOADAOF_LEFT_OVER)
        if server.dialect.debug_loadaof_missing_error is None:
            raise CommandError(LOADAOF_EXITS)  # DEBUG-LOADAOF-3: Redis exits, no reply
        _empty_data(server)  # LOADAOF-DIALECT-1: emptied, then the load fails; no counter zeroed
        raise CommandError(server.dialect.debug_loadaof_missing_error)
    empty_file = node.aof is None or (not isinstance(node.aof.base, Snapshot) and not node.aof.base
                                      and not node.aof.units and not node.aof.history)
    if empty_file and server.dialect.aof_single_file:  # LOADAOF-DIALECT-2: 6.2's file is still empty
        _empty_data(server)
        raise CommandError("ERR")
    if node.aof is None:  # DEBUG-LOADAOF-1: the first command since the start: the base the start wrote
        deployment_of(node).rewrite_aof(node)
    node.aof.synced = len(node.aof.units)  # DEBUG-LOADAOF-1: flushAppendOnlyFile(1)
    stats = copy.deepcopy(server.stats)  # the replay runs no command of a client: nothing counts
    _empty_data(server)
    if isinstance(node.aof.base, Snapshot):
        server.clock.now_ms()  # DEBUG-LOADAOF-1: loading the RDB preamble reads the clock once (its own)
    deployment_of(node)._load_aof(node)  # DEBUG-LOADAOF-1: base, then the units
    server.stats = stats
    server.stats.saved()  # DEBUG-LOADAOF-2: the changes counter is zero
    return OK  # DEBUG-LOADAOF-2: nothing propagates


def debug(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) > 1 and c_string(argv[1]).lower() == b"reload":
        return debug_reload(call)
    if len(argv) > 1 and c_string(argv[1]).lower() == b"loadaof":
        return debug_loadaof(call)
    return _OTHER_DEBUG(call)


def config_set(call: Call) -> HandlerResult:
    """``CONFIG SET appendonly yes|no`` alone: ``startAppendOnly`` and ``stopAppendOnly`` (AOF-SCHEDULE-1);
    every other CONFIG SET is admin.py's."""
    argv = call.argv
    if len(argv) != 4 or c_string(argv[2]).lower() != b"appendonly":
        return _OTHER_CONFIG_SET(call)
    from xspec.models.replication import deployment_of, node_of, setting
    server = call.server
    value = c_string(argv[3]).lower()
    if value not in (b"yes", b"no"):
        if not server.dialect.subcommand_table:  # CONFIG-DIALECT-1
            raise CommandError(config_invalid_argument(argv[3], argv[2], YES_NO))
        raise CommandError(config_set_failed(b"appendonly", YES_NO))  # CONFIG-7
    was = setting(server, "appendonly")
    server.config["appendonly"] = value.decode()  # CONFIG-8
    if was == value.decode():
        return OK
    node = node_of(server)
    deployment = deployment_of(node)
    if value == b"no":  # stopAppendOnly: a rewrite's child killed, none scheduled
        if node.aof is not None and node.aof.rewriting is not None:
            node.aof.rewriting = None
        node.rewrite_scheduled = False
        return OK
    child = deployment.child_of(node)
    if child == "rdb" or (call.in_exec and server.dialect.exec_schedules_children):
        node.rewrite_scheduled = True  # AOF-SCHEDULE-1: the cron's ``start-rewrite`` once no child runs
        return OK
    if child == "aof" and node.aof is not None:
        node.aof.rewriting = None  # AOF-SCHEDULE-1: the old rewrite's child is killed, a new one starts
    deployment.rewrite_aof(node, finished=False)  # AOF-5, AOF-7: done at the ``rewrite`` step
    node.rewrite_scheduled = False  # FORK-2: rewriteAppendOnlyFileBackground clears it
    node.aof_stopped = False  # type: ignore[attr-defined]  # as track_aof keeps it
    return OK


YES_NO = "argument must be 'yes' or 'no'"
_OTHER_CONFIG_SET = HANDLERS["config|set"]
HANDLERS["debug"] = debug
HANDLERS["config|set"] = config_set
AFTER_COMMAND.append(track_aof)
