"""Replies that describe the host, checked by shape (spec/trace-format.md "Environment").

:func:`environment_matches` is called by the conformance checker when a
recorded reply differs from the model's. It returns None when the command's
reply is fully semantic (the difference stands), otherwise whether the
recorded reply has the shape the rules in ``spec/rules/environment.md``
(ENV-*) demand. Nothing about streams, groups, PELs or consumers is here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xspec.spec import commands as table
from xspec.spec.info import UNKNOWN_COUNTER, UNKNOWN_SECTION_LINE
from xspec.spec.resp import Array, Bulk, Error, Int, Map, Reply, Simple, Verbatim

Check = Callable[[list[bytes], Reply, Reply], bool]


def environment_matches(argv: list[bytes], trace_reply: Reply, model_reply: Reply) -> bool | None:
    """None if ``argv``'s reply is not environment-dependent, else whether the
    recorded ``trace_reply`` has the right shape given the model's reply."""
    spec = table.lookup(argv)
    if spec is None:
        return None
    if spec.fullname == "exec":
        return _exec(trace_reply, model_reply)
    check = _CHECKS.get(spec.fullname)
    if check is None:
        return None
    if isinstance(model_reply, Error) or isinstance(trace_reply, Error):
        return False  # ENV-0: errors are semantic and were already compared exactly
    return check(argv, trace_reply, model_reply)


# -- helpers -------------------------------------------------------------------------
def _pairs(r: Reply) -> list[tuple[Reply, Reply]] | None:
    """A map reply's pairs, whether it came as a RESP3 map or a flat RESP2 array."""
    if isinstance(r, Map):
        return list(r.pairs)
    if isinstance(r, Array) and len(r.items) % 2 == 0:
        return list(zip(r.items[0::2], r.items[1::2], strict=True))
    return None


def _same_kind(a: Reply, b: Reply) -> bool:
    return type(a) is type(b)


def _text(r: Reply) -> str | None:
    """The text of a bulk (RESP2) or verbatim ``txt`` (RESP3) reply."""
    if isinstance(r, Bulk):
        return r.value.decode("latin-1")
    if isinstance(r, Verbatim) and r.fmt == "txt":
        return r.text.decode("latin-1")
    return None


# -- ENV-HELLO -------------------------------------------------------------------------
_HELLO_FREE = {b"id": Int, b"version": Bulk}


def _hello(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not _same_kind(trace, model):
        return False
    tp, mp = _pairs(trace), _pairs(model)
    if tp is None or mp is None or len(tp) != len(mp):
        return False
    for (tk, tv), (mk, mv) in zip(tp, mp, strict=True):
        if tk != mk:
            return False
        free = _HELLO_FREE.get(mk.value) if isinstance(mk, Bulk) else None
        if free is not None:
            if not isinstance(tv, free):
                return False
        elif tv != mv:
            return False
    return True


# -- ENV-CLIENT-ID ---------------------------------------------------------------------
def _client_id(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    return isinstance(trace, Int) and trace.value > 0


# -- ENV-CLIENT-LIST -------------------------------------------------------------------
# Fields of a CLIENT LIST line that are semantic; the others describe the
# connection (address, descriptor, buffers, memory, ages, events).
CLIENT_SEMANTIC_FIELDS = ("name", "flags", "db", "sub", "psub", "ssub", "multi", "cmd", "user", "redir", "resp")
_FIELD = re.compile(r"([a-z][a-z0-9-]*)=(\S*)")


def _client_line(line: str) -> list[tuple[str, str]] | None:
    fields = []
    for part in line.split(" "):
        m = _FIELD.fullmatch(part)
        if m is None:
            return None
        fields.append((m.group(1), m.group(2)))
    return fields


def _client_lines(r: Reply) -> list[list[tuple[str, str]]] | None:
    text = _text(r)
    if text is None or (text and not text.endswith("\n")):
        return None
    lines = []
    for line in text.split("\n")[:-1]:
        parsed = _client_line(line)
        if parsed is None:
            return None
        lines.append(parsed)
    return lines


def _client_lines_match(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not _same_kind(trace, model):
        return False
    tl, ml = _client_lines(trace), _client_lines(model)
    if tl is None or ml is None:
        return False
    by_id = len(argv) > 3 and argv[2].lower() == b"id"
    if by_id:
        # ENV-CLIENT-LIST: IDs are the host's numbering, so which clients an ID
        # list names cannot be checked; every line must still be well formed.
        return all([k for k, _ in t] == [k for k, _ in ml[0]] for t in tl) if ml else True
    if len(tl) != len(ml):
        return False
    for t, m in zip(tl, ml, strict=True):
        if [k for k, _ in t] != [k for k, _ in m]:
            return False
        td, md = dict(t), dict(m)
        if any(td.get(f) != md.get(f) for f in CLIENT_SEMANTIC_FIELDS):  # a dialect may lack some
            return False
    return True


# -- ENV-INFO --------------------------------------------------------------------------
def _sections(text: str) -> list[tuple[str, list[str]]] | None:
    if not text:
        return []
    if not text.endswith("\r\n"):
        return None
    sections: list[tuple[str, list[str]]] = []
    for block in text[:-2].split("\r\n\r\n"):
        lines = block.split("\r\n")
        if not lines[0].startswith("# "):
            return None
        body = lines[1:]
        if any(":" not in line for line in body):
            return None
        sections.append((lines[0][2:], body))
    return sections


_FREE_SECTIONS = {"Latencystats"}
# Lifetime counters the model knows once its count began with the server's (spec/rules/stats.md).
INFO_COUNTER_FIELDS = frozenset({"total_error_replies", "rdb_changes_since_last_save"})
# Which persistence child runs and whether a rewrite waits for one (spec/rules/replication.md FORK-1, FORK-2).
INFO_CHILD_FIELDS = frozenset({"rdb_bgsave_in_progress", "aof_rewrite_in_progress", "aof_rewrite_scheduled"})
_USEC = re.compile(r"usec=\d+,usec_per_call=[\d.]+,")


def _counters_match(name: str, tbody: list[str], mbody: list[str]) -> bool:
    """ENV-INFO: Errorstats line for line; Commandstats in any order (the hash seed's), ``usec``
    and ``usec_per_call`` free; either free when the model prints it unknown."""
    if UNKNOWN_SECTION_LINE in (mbody[:1] + tbody[:1]):  # either side may be the model's
        return True
    if name == "Errorstats":
        return tbody == mbody
    return sorted(_USEC.sub("", line) for line in tbody) == sorted(_USEC.sub("", line) for line in mbody)


def _info(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not _same_kind(trace, model):
        return False
    tt, mt = _text(trace), _text(model)
    if tt is None or mt is None:
        return False
    ts, ms = _sections(tt), _sections(mt)
    if ts is None or ms is None or [n for n, _ in ts] != [n for n, _ in ms]:
        return False
    for (name, tbody), (_, mbody) in zip(ts, ms, strict=True):
        if name in _FREE_SECTIONS:
            continue
        if name in ("Commandstats", "Errorstats"):
            if not _counters_match(name, tbody, mbody):
                return False
            continue
        if name == "Keyspace":
            # ENV-INFO: which databases hold how many keys is semantic
            if [_keys_of(line) for line in tbody] != [_keys_of(line) for line in mbody]:
                return False
            continue
        tfields = dict(line.split(":", 1) for line in tbody)
        for line in mbody:
            field, value = line.split(":", 1)
            if field not in tfields:
                return False
            if field in ("redis_version", "redis_mode") and tfields[field] != value:
                return False
            if (field in INFO_COUNTER_FIELDS or field in INFO_CHILD_FIELDS) and UNKNOWN_COUNTER not in (value, tfields[field]) \
                    and tfields[field] != value:
                return False
    return True


def _keys_of(line: str) -> tuple[str, str]:
    db, _, stats = line.partition(":")
    return db, stats.split(",", 1)[0]


# -- ENV-DEBUG-OBJECT ---------------------------------------------------------------------
_ADDRESS = re.compile(r"^Value at:0x[0-9a-f]+ ")


def _debug(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    """DEBUG OBJECT's ``Value at:`` is the host's address; every other DEBUG reply is exact."""
    if not (len(argv) == 3 and argv[1].lower() == b"object" and isinstance(trace, Simple)
            and isinstance(model, Simple)):
        return False
    return _ADDRESS.sub("", trace.text) == _ADDRESS.sub("", model.text) and bool(_ADDRESS.match(trace.text))


# -- ENV-CONFIG ------------------------------------------------------------------------
# Parameters whose value says how and where the server was started.
CONFIG_ENVIRONMENT = frozenset({
    "port", "bind", "dir", "logfile", "pidfile", "save", "daemonize", "supervised", "unixsocket",
    "unixsocketperm", "dbfilename", "appendonly", "appendfilename", "appenddirname", "maxclients",
})


def _config_get(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not _same_kind(trace, model):
        return False
    tp, mp = _pairs(trace), _pairs(model)
    if tp is None or mp is None or len(tp) != len(mp):
        return False
    tdict = {k: v for k, v in tp}
    if len(tdict) != len(tp):
        return False
    for k, v in mp:
        if k not in tdict:
            return False
        name = k.value.decode("latin-1").lower() if isinstance(k, Bulk) else ""
        if name not in CONFIG_ENVIRONMENT and tdict[k] != v:
            return False
    return True


# -- ENV-KEYS and ENV-SCAN -----------------------------------------------------------
def _keys(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not (isinstance(trace, Array) and isinstance(model, Array)):
        return False
    got, want = _bulk_values(trace), _bulk_values(model)
    return got is not None and want is not None and sorted(got) == sorted(want)


def _bulk_values(r: Array) -> list[bytes] | None:
    if not all(isinstance(i, Bulk) for i in r.items):
        return None
    return [i.value for i in r.items if isinstance(i, Bulk)]


def _scan(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    if not (isinstance(trace, Array) and isinstance(model, Array)):
        return False
    if len(trace.items) != 2 or len(model.items) != 2:
        return False
    cursor, keys = trace.items
    if not (isinstance(cursor, Bulk) and cursor.value.isdigit() and isinstance(keys, Array)):
        return False
    model_keys = model.items[1]
    assert isinstance(model_keys, Array)
    got, allowed = _bulk_values(keys), _bulk_values(model_keys)
    if got is None or allowed is None or len(set(got)) != len(got):
        return False
    if not set(got) <= set(allowed):
        return False
    # A call that starts and ends at cursor 0 is a whole iteration: it returns everything, and it
    # visited every expired key (SCAN-6: a model that left one unvisited answers a nonzero cursor).
    whole = argv[1].isdigit() and int(argv[1]) == 0 and cursor.value == b"0"
    if whole:
        model_cursor = model.items[0]
        return set(got) == set(allowed) and isinstance(model_cursor, Bulk) and model_cursor.value == b"0"
    return True


def _zscan(argv: list[bytes], trace: Reply, model: Reply) -> bool:
    """ENV-SCAN for ZSCAN of a hash-table sorted set: a page of member-score pairs the model has."""
    if not (isinstance(trace, Array) and isinstance(model, Array) and len(trace.items) == len(model.items) == 2):
        return False
    cursor, page = trace.items
    model_page = model.items[1]
    if not (isinstance(cursor, Bulk) and cursor.value.isdigit() and isinstance(page, Array)
            and isinstance(model_page, Array)):
        return False
    got, allowed = _bulk_values(page), _bulk_values(model_page)
    if got is None or allowed is None or len(got) % 2 or len(allowed) % 2:
        return False
    pairs = list(zip(got[0::2], got[1::2], strict=True))
    known = dict(zip(allowed[0::2], allowed[1::2], strict=True))
    if len({m for m, _ in pairs}) != len(pairs) or any(known.get(m) != score for m, score in pairs):
        return False
    whole = argv[2].isdigit() and int(argv[2]) == 0 and cursor.value == b"0"
    return len(pairs) == len(known) if whole else True


_CHECKS: dict[str, Check] = {
    "hello": _hello,
    "client|id": _client_id,
    "client|info": _client_lines_match,
    "client|list": _client_lines_match,
    "info": _info,
    "config|get": _config_get,
    "keys": _keys,
    "scan": _scan,
    "sscan": lambda argv, trace, model: _scan(argv[1:], trace, model),
    "zscan": _zscan,
    "hscan": _zscan,  # ENV-SCAN for HSCAN of a hash table: a page of field-value pairs the model has
    "debug": _debug,
}


# -- ENV-EXEC --------------------------------------------------------------------------
def _exec(trace: Reply, model: Reply) -> bool | None:
    """An EXEC array differs only in replies that are unmistakably HELLO, CLIENT
    INFO/LIST or INFO replies, each of which has the right shape (ENV-EXEC).

    The checker does not say which commands were queued, so other
    environment-dependent replies inside EXEC (CLIENT ID, KEYS, SCAN, CONFIG
    GET) are compared exactly.
    """
    if not (isinstance(trace, Array) and isinstance(model, Array)) or len(trace.items) != len(model.items):
        return None
    for t, m in zip(trace.items, model.items, strict=True):
        if t == m:
            continue
        argv = _recognise(m)
        if argv is None:
            return False
        spec = table.lookup(argv)
        assert spec is not None
        if isinstance(t, Error) or not _CHECKS[spec.fullname](argv, t, m):
            return False
    return True


def _recognise(model: Reply) -> list[bytes] | None:
    """The command a model reply inside EXEC must come from, if its shape says so."""
    pairs = _pairs(model)
    if pairs and pairs[0] in ((Bulk(b"server"), Bulk(b"redis")), (Bulk(b"server"), Bulk(b"valkey"))):
        return [b"HELLO"]  # HELLO-DIALECT-1: Valkey names itself
    text = _text(model)
    if text is not None and text.startswith("id=") and " cmd=" in text:
        return [b"CLIENT", b"LIST"]
    if text is not None and text.startswith("# "):
        return [b"INFO"]
    return None
