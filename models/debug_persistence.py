"""DEBUG RELOAD in the model, for ``xspec serve --checked`` (the persistence DEBUG subcommands).

``DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`` saves the RDB file (RDB-1: the data as of now, in the
dialect's RDB version, RDB-3/RDB-4), empties the data and loads the file back: what the file does
not keep is lost (6.2's version 9 has no entries-read), the changes counter is zero (STATS-4) and the
reply is ``OK``. An unknown option is refused before anything happens. Forms that load a file the
model did not write (NOSAVE), or that load on top of the data (NOFLUSH), are refused as unmodelled.
DEBUG LOADAOF is not modelled here (what the AOF replays differs from the data in delivery counts,
seen-times and node layout; see reference/aof.py).

Registered in front of :mod:`xspec.models.debug`'s DEBUG, which answers every other subcommand.
"""

from __future__ import annotations

from xspec.models import debug as _plain_debug
from xspec.models.persistence import load_snapshot, take_snapshot
from xspec.models.server import HANDLERS, Call, CommandError, HandlerResult
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
    now = call.now()
    for db, loaded in zip(server.dbs, load_snapshot(snapshot), strict=True):
        db.clear()
        db.update(loaded)
        for key, when in list(getattr(db, "expires", {}).items()):
            if when < now:  # EXPIRE-KEYS-1: a primary loading an RDB file skips keys already expired
                del db[key]
    return OK


def debug(call: Call) -> HandlerResult:
    argv = call.argv
    if len(argv) > 1 and c_string(argv[1]).lower() == b"reload":
        return debug_reload(call)
    return _OTHER_DEBUG(call)


HANDLERS["debug"] = debug
