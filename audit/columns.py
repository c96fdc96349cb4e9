"""The delivery ledger computed column by column (Arrow compute and numpy) over whole traces.

:func:`split_ledger` takes a table of events (whole traces, sorted by trace and event) and
returns the ledger rows of every stream key whose commands it can read column by column, exactly
the rows :class:`~xspec.audit.ledger.LedgerFold` gives for them, plus the events the fold still
has to read for the other keys (spec/audit.md, "The delivery ledger", "How the ledger is
computed"). The column-wise path covers keys touched only by XADD without trimming, XGROUP
CREATE, single-stream XREADGROUP without NOACK, XCLAIM and XAUTOCLAIM without JUSTID or
RETRYCOUNT (and no deleted IDs), and XACK whose count covers all or none of its IDs; every other
key (removals, trimming, partial XACK counts, dead-lettering connections...) and every trace
with MULTI, send/recv, FLUSHALL/FLUSHDB or several nodes goes to the fold.

Each entry's life is a run of facts sorted by (trace, key, group, ID, event): the XADD that found
the group there, its deliveries and its XACKs. Delivery counts, the pending state at the end,
the owner and the acked flag are segmented scans over that run; XACK attribution (the consumer
the connection last used with the group) is an as-of lookup over the reads and claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xspec.audit.schema import ACK, DELIVERY, LEDGER

FOLD_EVS = ("send", "recv", "push", "crash", "restart", "pause", "resume", "link", "repl")
"""Events only the fold reads: a trace holding one goes to the fold whole."""
FOLD_TRACE_OPS = ("MULTI", "EXEC", "DISCARD", "FLUSHALL", "FLUSHDB")
"""Commands that make the fold read the whole trace."""
FOLD_KEY_OPS = ("XDEL", "XTRIM", "XGROUP DESTROY", "XGROUP DELCONSUMER", "DEL", "UNLINK")
"""Commands that make the fold read every key they name (removals and group changes)."""
_SECOND_KEY_OPS = ("XGROUP CREATE", "XGROUP DESTROY", "XGROUP DELCONSUMER")
_FIRST_KEY_OPS = ("XADD", "XACK", "XCLAIM", "XAUTOCLAIM", "XDEL", "XTRIM")
_TRIM_WORDS = ("NOMKSTREAM", "MAXLEN", "MINID", "LIMIT")
_READ_OPTIONS = ("COUNT", "BLOCK")


def _np(a: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False))


def _ints(a: pa.Array, fill: int = -1) -> np.ndarray:
    return np.asarray(pc.fill_null(a, fill).to_numpy(zero_copy_only=False), dtype=np.int64)


def _upper_in(a: pa.Array, words: tuple[str, ...]) -> np.ndarray:
    """Which binary values are one of ``words`` in any case (ASCII case folding, as ``bytes.upper``)."""
    text = pc.ascii_upper(a.view(pa.string()))
    return _np(pc.is_in(text, value_set=pa.array(words, pa.string())))


@dataclass
class _Args:
    """The arguments of a ``list<binary>`` column, addressed by position (null past the end)."""

    values: pa.Array
    starts: np.ndarray
    lens: np.ndarray
    taken: dict[int, pa.Array]

    @classmethod
    def of(cls, cmd: pa.Array) -> _Args:
        offsets = np.asarray(cmd.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        lens = np.where(_np(cmd.is_valid()), offsets[1:] - offsets[:-1], 0)
        return cls(cmd.values, offsets[:-1], lens, {})

    def at(self, i: int | np.ndarray) -> pa.Array:
        """Argument ``i`` of every row (a negative ``i`` counts from the end)."""
        if isinstance(i, int) and i in self.taken:
            return self.taken[i]
        pos = np.where(np.asarray(i) >= 0, i, self.lens + i)
        ok = (pos >= 0) & (pos < self.lens)
        got = pc.take(self.values, pa.array(np.where(ok, self.starts + pos, 0), mask=~ok))
        if isinstance(i, int):
            self.taken[i] = got
        return got

    def tail(self, rows: np.ndarray, first: int) -> tuple[np.ndarray, pa.Array]:
        """(row, argument) for every argument from position ``first`` on, of the given rows."""
        counts = np.maximum(self.lens[rows] - first, 0)
        owner = np.repeat(rows, counts)
        base = np.repeat(self.starts[rows] + first - np.cumsum(counts) + counts, counts)
        return owner, pc.take(self.values, pa.array(base + np.arange(counts.sum())))


def dense(*codes: np.ndarray) -> np.ndarray:
    """One dense code (0, 1, ...) per distinct tuple of the given non-negative integer codes."""
    out = np.asarray(codes[0], dtype=np.int64)
    for c in codes[1:]:
        c = np.asarray(c, dtype=np.int64)
        width = int(c.max()) + 1 if len(c) else 1
        out = np.unique(out * width + c, return_inverse=True)[1].astype(np.int64)
    if len(codes) == 1:
        out = np.unique(out, return_inverse=True)[1].astype(np.int64)
    return out


def last_before(seg_right: np.ndarray, ev_right: np.ndarray, seg_left: np.ndarray,
                ev_left: np.ndarray) -> np.ndarray:
    """For each left (segment, event): the index of the right row of the same segment with the largest event
    below it, or -1."""
    if not len(seg_right) or not len(seg_left):
        return np.full(len(seg_left), -1, dtype=np.int64)
    rank = dense(np.concatenate([seg_right, seg_left]))
    r_rank, l_rank = rank[: len(seg_right)], rank[len(seg_right):]
    r_key = (r_rank << 32) | ev_right.astype(np.int64)
    order = np.argsort(r_key, kind="stable")
    sorted_key = r_key[order]
    i = np.searchsorted(sorted_key, (l_rank << 32) | ev_left.astype(np.int64), side="left") - 1
    hit = (i >= 0) & ((sorted_key[np.maximum(i, 0)] >> 32) == l_rank)
    return np.where(hit, order[np.maximum(i, 0)], -1)


def _encode(*arrays: pa.Array) -> tuple[pa.Array, list[np.ndarray]]:
    """One dictionary for several arrays of one type: (dictionary, each array's codes, -1 for null)."""
    enc = pc.dictionary_encode(pa.concat_arrays([a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                                                 for a in arrays]))
    codes = _ints(enc.indices)
    out, at = [], 0
    for a in arrays:
        out.append(codes[at: at + len(a)])
        at += len(a)
    return enc.dictionary, out


def _with_groups(tk: np.ndarray, when: np.ndarray, rows: np.ndarray, cr_rows: np.ndarray, event: np.ndarray,
                 group_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, XGROUP CREATE row) for every group created on each row's key before ``when`` (one per group)."""
    none = np.zeros(0, np.int64)
    if not len(cr_rows) or not len(rows):
        return none, none
    cr_sorted = cr_rows[np.lexsort((event[cr_rows], tk[cr_rows]))]
    lo = np.searchsorted(tk[cr_sorted], tk[rows], side="left")
    reps = np.searchsorted(tk[cr_sorted], tk[rows], side="right") - lo
    pair_rows = np.repeat(rows, reps)
    pair_when = np.repeat(when, reps)
    pair_cr = cr_sorted[np.repeat(lo - np.cumsum(reps) + reps, reps) + np.arange(reps.sum())]
    ok = event[pair_cr] < pair_when
    pair_rows, pair_cr = pair_rows[ok], pair_cr[ok]
    _, keep = np.unique(dense(pair_rows, group_c[pair_cr] + 1), return_index=True)
    return pair_rows[keep], pair_cr[keep]


def _dead_letters(dl_rows: np.ndarray, batch: pa.RecordBatch, trace_c: np.ndarray, key_c: np.ndarray,
                  group_c: np.ndarray, event: np.ndarray, client: np.ndarray, close_rows: np.ndarray,
                  adds: np.ndarray, key_dict: pa.Array, reply_ids: pa.Array, d_row: np.ndarray, d_id_c: np.ndarray,
                  d_fields: pa.Array, k_row: np.ndarray, k_id_c: np.ndarray) -> list[tuple[int, tuple[bytes, str, int]]]:
    """The dead letters XACKs collect, as the fold finds them (spec/audit.md, "Dead-lettering"), followed in Python
    over the events of the connections that both add and receive entries (few): (index of the XACK in ``k_row``,
    (stream, ID, event) of the XADD that dead-lettered the entry)."""
    if not dl_rows.any():
        return []
    from xspec.audit.nodes import xadd_parts
    # (trace, event, order within the event, what, data): the deliveries, XADDs, XACKs and closes, in event order
    # (sorted by numpy; a stable sort keeps that order of the kinds, which never share an event)
    d_sel = np.flatnonzero(dl_rows[d_row])
    x_rows = np.flatnonzero(adds & dl_rows)
    k_sel = np.flatnonzero(dl_rows[k_row])
    rows = np.concatenate([d_row[d_sel], x_rows, k_row[k_sel], close_rows])
    within = np.concatenate([d_sel, np.zeros(len(x_rows), np.int64), k_sel, np.zeros(len(close_rows), np.int64)])
    order = np.lexsort((within, event[rows], trace_c[rows])).tolist()
    fields = pc.take(d_fields, pa.array(d_sel, pa.int64())).to_pylist()
    cmds = pc.take(batch.column("cmd"), pa.array(x_rows, pa.int64())).to_pylist()
    ids = pc.take(reply_ids, pa.array(x_rows, pa.int64())).to_pylist()
    r_trace, r_event, r_client = trace_c[rows].tolist(), event[rows].tolist(), client[rows].tolist()
    r_key, r_group = key_c[rows].tolist(), group_c[rows].tolist()
    d_ids, k_ids, ks = d_id_c[d_sel].tolist(), k_id_c[k_sel].tolist(), k_sel.tolist()
    nd, nx, nk = len(d_sel), len(x_rows), len(k_sel)
    steps: list[tuple[int, int, int, int, tuple[Any, ...]]] = []
    for at in order:
        if at < nd:
            data: tuple[Any, ...] = (r_client[at], (r_key[at], r_group[at], d_ids[at]), tuple(fields[at]))
            what = 0
        elif at < nd + nx:
            n = at - nd
            data, what = (r_client[at], r_key[at], ids[n][0], tuple(xadd_parts(cmds[n])[4])), 1
        elif at < nd + nx + nk:
            n = at - nd - nx
            data, what = (r_client[at], (r_key[at], r_group[at], k_ids[n]), ks[n]), 2
        else:
            data, what = (r_client[at],), 3
        steps.append((r_trace[at], r_event[at], 0, what, data))
    pops: list[tuple[int, tuple[bytes, str, int]]] = []
    conns: dict[tuple[int, int], tuple[dict[Any, Any], dict[Any, set[Any]], dict[Any, Any]]] = {}
    for trace, ev, _, what, data in steps:
        c = (trace, data[0])
        if what == 3:
            conns.pop(c, None)
            continue
        delivered, by_payload, dead = conns.setdefault(c, ({}, {}, {}))
        if what == 0:  # a delivery of k with its payload
            _, k, payload = data
            old = delivered.get(k)
            if old is not None:
                by_payload.get(old, set()).discard(k)
            delivered[k] = payload
            by_payload.setdefault(payload, set()).add(k)
        elif what == 1:  # an XADD: the entries this connection holds with that payload, on another stream
            _, key, new_id, payload = data
            for origin in by_payload.get(payload, ()):
                if origin[0] != key:
                    dead[origin] = (key_dict[key].as_py(), new_id, ev)
        else:  # an XACK of k: what was dead-lettered is collected, what was received is done
            _, k, j = data
            got = dead.pop(k, None)
            if got is not None:
                pops.append((j, got))
            payload = delivered.pop(k, None)
            if payload is not None:
                by_payload.get(payload, set()).discard(k)
    return pops


def split_ledger(batch: pa.RecordBatch, ends: dict[str, int | None]) -> tuple[pa.Table, pa.RecordBatch,
                                                                               set[tuple[str, bytes]], set[str]]:
    """(the column-wise ledger rows, the events the fold must read, the (trace, key) pairs it must keep rows for,
    the traces it must keep whole) of ``batch``: whole traces sorted by trace and event, with the fold's input
    columns; ``ends`` is each trace's largest timestamp."""
    n = batch.num_rows
    col = batch.column
    trace_dict, (trace_c,) = _encode(col("trace"))
    ev, op = col("ev"), col("op")
    args = _Args.of(col("cmd"))
    ncmd = args.lens
    call = _np(pc.equal(ev, "call"))
    effective = call & _np(pc.is_null(col("reply_error"))) & ~_np(pc.is_in(col("reply_type"), value_set=pa.array(
        ["error", "blob_error"]))) & _np(pc.is_valid(op))

    op_dict, (op_c,) = _encode(op)  # one pass over the names: the masks below compare small codes
    op_names = op_dict.to_pylist()

    def op_in(names: tuple[str, ...]) -> np.ndarray:
        return np.isin(op_c, [code for code, name in enumerate(op_names) if name in names])

    def is_op(*names: str) -> np.ndarray:
        return effective & op_in(names)

    xadd, create, xread = is_op("XADD"), is_op("XGROUP CREATE") & (ncmd > 3), is_op("XREADGROUP")
    xclaim, xauto, xack = is_op("XCLAIM") & (ncmd > 5), is_op("XAUTOCLAIM") & (ncmd > 5), is_op("XACK") & (ncmd > 3)
    removal = is_op(*FOLD_KEY_OPS)

    # the key the fold applies a command to, and its group and consumer arguments
    second = op_in(_SECOND_KEY_OPS)
    key_arg = pc.if_else(pa.array(second), args.at(2), args.at(1))
    standard = xread & _upper_in(args.at(1), ("GROUP",)) & np.isin(ncmd, (7, 9, 11)) & \
        _upper_in(args.at(ncmd - 3), ("STREAMS",)) & ((ncmd < 9) | _upper_in(args.at(4), _READ_OPTIONS)) & \
        ((ncmd < 11) | _upper_in(args.at(6), _READ_OPTIONS))
    key_arg = pc.if_else(pa.array(xread), args.at(ncmd - 2), key_arg)
    group_arg = pc.if_else(pa.array(create), args.at(3), args.at(2))
    consumer_arg = args.at(3)
    uses = standard | xclaim | xauto

    # entries delivered by the reads and claims (with their fields: a nil payload is no delivery)
    entries = col("entries")
    e_offsets = np.asarray(entries.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    e_lens = np.where(_np(entries.is_valid()), e_offsets[1:] - e_offsets[:-1], 0)
    e_rows = np.flatnonzero(uses & (e_lens > 0))
    e_counts = e_lens[e_rows]
    e_owner = np.repeat(e_rows, e_counts)
    e_index = np.repeat(e_offsets[e_rows] - np.cumsum(e_counts) + e_counts, e_counts) + np.arange(e_counts.sum())
    flat = entries.values
    e_take = pa.array(e_index, pa.int64())
    e_key = pc.take(pc.struct_field(flat, "key"), e_take)
    e_id = pc.take(pc.struct_field(flat, "id"), e_take)
    e_has_fields = _np(pc.is_valid(pc.take(pc.struct_field(flat, "fields"), e_take)))

    # what sends a trace, or a key, to the fold
    fold_trace = np.zeros(len(trace_dict), dtype=bool)
    fold_trace[trace_c[_np(pc.is_in(ev, value_set=pa.array(FOLD_EVS)))]] = True
    fold_trace[trace_c[call & op_in(FOLD_TRACE_OPS)]] = True
    header = _np(pc.equal(ev, "header"))
    fold_trace[trace_c[header & _np(pc.match_substring(col("text"), '"nodes"'))]] = True
    fold_trace[trace_c[xread & ~standard]] = True  # the fold's reading of its keys is the one to follow
    relevant = xadd | create | uses | xack | (removal & ~is_op("DEL", "UNLINK"))
    fold_trace[trace_c[relevant & ~_np(pc.is_valid(key_arg))]] = True
    wrong_key = ~_np(pc.equal(e_key, pc.take(key_arg, pa.array(e_owner, pa.int64()))))
    fold_trace[trace_c[e_owner[wrong_key & xread[e_owner]]]] = True

    del_rows = np.flatnonzero(is_op("DEL", "UNLINK"))
    del_owner, del_keys = args.tail(del_rows, 1)
    key_dict, (key_c, del_key_c) = _encode(key_arg, del_keys)
    nkeys = max(len(key_dict), 1)
    tk = np.where(key_c >= 0, trace_c * nkeys + key_c, -1)
    fold_tk: list[np.ndarray] = [tk[removal & ~is_op("DEL", "UNLINK")], trace_c[del_owner] * nkeys + del_key_c]
    # exact MAXLEN trimming (``MAXLEN n`` or ``MAXLEN = n`` before the ID) is followed here; other options in the fold
    maxlen = xadd & _upper_in(args.at(2), ("MAXLEN",))
    equals = _np(pc.equal(args.at(3), b"="))
    threshold = pc.if_else(pa.array(equals), args.at(4), args.at(3))
    digits = _np(pc.match_substring_regex(threshold.view(pa.string()), "^[0-9]{1,15}$"))
    trims = maxlen & digits & ~_upper_in(pc.if_else(pa.array(equals), args.at(5), args.at(4)), _TRIM_WORDS)
    fold_tk.append(tk[xadd & _upper_in(args.at(2), _TRIM_WORDS) & ~trims])
    claim_rows = np.flatnonzero(xclaim | xauto)
    c_owner, c_args = args.tail(claim_rows, 5)
    words = _upper_in(c_args, ("JUSTID", "RETRYCOUNT"))
    fold_tk.append(tk[np.unique(c_owner[words])])
    fold_tk.append(tk[xauto & _np(pc.greater(pc.fill_null(pc.list_value_length(col("reply_ids")), 0), 0))])
    # XACK: the IDs (distinct, ASCII) and whether its count covers all or none of them
    a_rows = np.flatnonzero(xack)
    a_owner, a_ids = args.tail(a_rows, 3)
    a_text = a_ids.view(pa.string())
    reply_int = _ints(col("reply_int"), 0)
    # each XADD's new ID (the first of its reply IDs; null on other rows, whose codes are never read)
    reply_ids = col("reply_ids")
    r_offsets = np.asarray(reply_ids.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    has_ids = _np(reply_ids.is_valid()) & (r_offsets[1:] > r_offsets[:-1])
    added_id = pc.take(reply_ids.values, pa.array(np.where(xadd & has_ids, r_offsets[:-1], 0), mask=~(xadd & has_ids)))
    id_dict, (a_id_c, e_id_c, add_id_c) = _encode(a_text, e_id, added_id)
    a_n = ncmd[a_owner] - 3
    a_reply = reply_int[a_owner]
    partial = (a_reply > 0) & (a_reply < a_n)
    dup = np.zeros(n, dtype=bool)
    if len(a_owner):
        pair = dense(a_owner, a_id_c)
        dup[a_owner[np.bincount(pair)[pair] > 1]] = True
    fold_tk.append(tk[a_owner[partial | ~_np(pc.string_is_ascii(a_text))]])
    fold_tk.append(tk[dup])
    adds = xadd & _np(pc.greater(pc.fill_null(pc.list_value_length(col("reply_ids")), 0), 0))
    add_all = np.flatnonzero(adds)
    if len(add_all):  # an ID added twice to one key (after a removal) is the fold's to follow
        trip = dense(trace_c[add_all], key_c[add_all] + 1, add_id_c[add_all])
        fold_tk.append(tk[add_all[np.bincount(trip)[trip] > 1]])
    # a connection that adds entries and also receives them may dead-letter what it received
    client = _ints(col("client"), -1)
    receivers = np.unique(e_owner)
    tc_width = int(client.max()) + 2 if n else 1
    tc = trace_c * tc_width + client + 1
    dl_tc = np.intersect1d(tc[adds], tc[receivers])
    fold_keys = np.unique(np.concatenate(fold_tk))
    in_fold_key = np.isin(tk, fold_keys) & (tk >= 0)
    row_fold = fold_trace[trace_c] | header | _np(pc.equal(ev, "close")) | \
        (relevant & in_fold_key) | is_op("DEL", "UNLINK") | (adds & np.isin(tc, dl_tc))
    fold_rows = batch.filter(pa.array(row_fold))
    keep_keys = {(trace_dict[t // nkeys].as_py(), key_dict[t % nkeys].as_py()) for t in fold_keys.tolist()}
    keep_traces = {trace_dict[int(t)].as_py() for t in np.flatnonzero(fold_trace)}

    # -- the column-wise rows --------------------------------------------------------------
    column = ~fold_trace[trace_c] & ~in_fold_key & (tk >= 0)
    event = _ints(col("event"))
    t1, now = _ints(col("t1"), -1), _ints(col("now"), -1)
    has_t1, has_now = _np(pc.is_valid(col("t1"))), _np(pc.is_valid(col("now")))
    time_valid = has_t1 | has_now
    time = np.where(has_t1, t1, now * 1000)
    group_dict, (group_c, ) = _encode(group_arg)

    add_rows = np.flatnonzero(adds & column)
    limit = np.where(trims, _ints(pc.cast(pc.if_else(pa.array(trims), threshold.view(pa.string()), "0"), pa.int64()),
                                  0), -1)
    # trimming: after the j-th XADD of a key (from 0) the stream holds its entries from s_j on, where s_j is the
    # running maximum of j + 1 - MAXLEN over its trimming XADDs; entry i goes at the first XADD with s_j > i
    removed_by = np.full(n, -1, dtype=np.int64)  # for an XADD row: the XADD row that trimmed its entry away
    if trims[add_rows].any():
        by_key = add_rows[np.lexsort((event[add_rows], tk[add_rows]))]
        key_start = np.concatenate([[True], tk[by_key][1:] != tk[by_key][:-1]])
        at = np.arange(len(by_key))
        base = np.maximum.accumulate(np.where(key_start, at, 0))
        nth = at - base
        lower = np.where(trims[by_key], nth + 1 - limit[by_key], 0)
        low_run = np.zeros(len(by_key), dtype=np.int64)
        for lo, hi in zip(np.flatnonzero(key_start), [*np.flatnonzero(key_start)[1:], len(by_key)], strict=True):
            low_run[lo:hi] = np.maximum.accumulate(lower[lo:hi])
        # the first XADD of the same key whose start passed entry i: s is non-decreasing within a key
        key_end = np.concatenate([np.flatnonzero(key_start)[1:], [len(by_key)]])[np.cumsum(key_start) - 1]
        start_of = base + low_run  # positions in by_key, comparable with at
        first_past = np.empty(len(by_key), dtype=np.int64)
        for lo, hi in zip(np.flatnonzero(key_start), [*np.flatnonzero(key_start)[1:], len(by_key)], strict=True):
            first_past[lo:hi] = lo + np.searchsorted(start_of[lo:hi], at[lo:hi], side="right")
        gone = first_past < key_end
        removed_by[by_key[gone]] = by_key[first_past[gone]]
    # the groups each XADD found: groups created (first XGROUP CREATE) on the key at an earlier event
    cr_rows = np.flatnonzero(create & column)
    pair_rows_add, pair_rows_cr = _with_groups(tk, event[add_rows], add_rows, cr_rows, event, group_c)

    # deliveries
    d_sel = np.flatnonzero(e_has_fields & column[e_owner])
    d_row = e_owner[d_sel]
    d_id_c = e_id_c[d_sel]
    is_read = xread[d_row]
    gt = _np(pc.equal(args.at(ncmd - 1), b">"))
    how_code = np.where(is_read, np.where(gt[d_row], 0, 1), np.where(xclaim[d_row], 2, 3))

    # XACKs (their rows are whole: no duplicates, no partial counts)
    a_sel = np.flatnonzero(column[a_owner])
    k_row = a_owner[a_sel]
    k_id_c = a_id_c[a_sel]
    k_included = a_reply[a_sel] >= a_n[a_sel]

    # attribution: the consumer of the connection's last read or claim for the group, since its last close
    u_rows = np.flatnonzero(uses & column)
    close_rows = np.flatnonzero(_np(pc.equal(ev, "close")))
    seg_u = dense(np.concatenate([tc[u_rows], tc[k_row]]), np.concatenate([key_c[u_rows], key_c[k_row]]),
                  np.concatenate([group_c[u_rows], group_c[k_row]]) + 1)
    last_use = last_before(seg_u[: len(u_rows)], event[u_rows], seg_u[len(u_rows):], event[k_row])
    last_close = last_before(tc[close_rows], event[close_rows], tc[k_row], event[k_row])
    use_event = np.where(last_use >= 0, event[u_rows[np.maximum(last_use, 0)]] if len(u_rows) else -1, -1)
    close_event = np.where(last_close >= 0, event[close_rows[np.maximum(last_close, 0)]] if len(close_rows) else -1,
                           -1)
    attributed = (last_use >= 0) & (use_event > close_event)
    k_consumer_row = np.where(attributed, u_rows[np.maximum(last_use, 0)] if len(u_rows) else 0, -1)

    # dead-lettering, followed for the connections that both add and receive entries
    dl_pops = _dead_letters(np.isin(tc, dl_tc), batch, trace_c, key_c, group_c, event, client, close_rows, adds,
                            key_dict, col("reply_ids"), e_owner[d_sel], d_id_c,
                            pc.take(pc.struct_field(flat, "fields"), pa.array(e_index[d_sel], pa.int64())),
                            k_row, k_id_c)

    # -- facts: (trace, key, group, id, event, kind) sorted; a segment is one ledger row ----------
    # removals: the trimmed entry in every group its key had at that moment
    trimmed = add_rows[removed_by[add_rows] >= 0]
    rm_add, rm_cr = _with_groups(tk, removed_by[trimmed], trimmed, cr_rows, event, group_c)
    rm_by = removed_by[rm_add]
    kinds = np.concatenate([np.zeros(len(pair_rows_add), np.int8), np.ones(len(d_row), np.int8),
                            np.full(len(k_row), 2, np.int8), np.full(len(rm_add), 3, np.int8)])
    f_row = np.concatenate([pair_rows_add, d_row, k_row, rm_add])
    f_group = np.concatenate([group_c[pair_rows_cr], group_c[d_row], group_c[k_row], group_c[rm_cr]])
    f_id = np.concatenate([add_id_c[pair_rows_add], d_id_c, k_id_c, add_id_c[rm_add]])
    f_src = np.concatenate([np.arange(len(pair_rows_add)), np.arange(len(d_row)), np.arange(len(k_row)),
                            np.arange(len(rm_add))])
    if not len(f_row):
        return LEDGER.empty_table(), fold_rows, keep_keys, keep_traces
    f_event = np.concatenate([event[f_row[: len(f_row) - len(rm_add)]], event[rm_by]])
    seg = dense(trace_c[f_row], key_c[f_row], f_group, f_id)
    order = np.lexsort((kinds, f_event, seg))
    seg, kinds, f_row, f_group, f_id, f_src, f_event = (a[order] for a in (seg, kinds, f_row, f_group, f_id, f_src,
                                                                           f_event))
    starts = np.flatnonzero(np.concatenate([[True], seg[1:] != seg[:-1]]))
    nseg = len(starts)
    seg_of = np.cumsum(np.concatenate([[False], seg[1:] != seg[:-1]]))
    first = starts

    # deliveries in segment order, with the delivery count after each
    is_d = kinds == 1
    d_pos = f_src[is_d]
    d_seg = seg_of[is_d]
    d_how = how_code[d_pos]
    d_first = np.concatenate([[True], d_seg[1:] != d_seg[:-1]]) if len(d_seg) else np.zeros(0, bool)
    reset = (d_how == 0) | d_first
    idx = np.arange(len(d_pos))
    count = idx - np.maximum.accumulate(np.where(reset, idx, 0)) + 1 if len(idx) else idx
    d_rows_sorted = d_row[d_pos]
    d_take = pa.array(d_rows_sorted, pa.int64())
    deliveries_struct = pa.StructArray.from_arrays([
        pa.array(event[d_rows_sorted], pa.int32()), pa.array(client[d_rows_sorted], pa.int32()),
        pc.take(consumer_arg, d_take), pa.array(time[d_rows_sorted], pa.int64(), mask=~time_valid[d_rows_sorted]),
        pc.take(pa.array([">", "history", "XCLAIM", "XAUTOCLAIM"]), pa.array(d_how)),
        pa.array(count, pa.int64())], fields=list(DELIVERY))
    d_offsets = np.concatenate([[0], np.cumsum(np.bincount(d_seg, minlength=nseg))]).astype(np.int32)
    deliveries = pa.ListArray.from_arrays(pa.array(d_offsets), deliveries_struct, type=pa.list_(DELIVERY))

    is_k = kinds == 2
    k_pos = f_src[is_k]
    k_seg = seg_of[is_k]
    k_rows_sorted = k_row[k_pos]
    k_cons = k_consumer_row[k_pos]
    acks_struct = pa.StructArray.from_arrays([
        pa.array(event[k_rows_sorted], pa.int32()), pa.array(client[k_rows_sorted], pa.int32()),
        pc.take(consumer_arg, pa.array(np.maximum(k_cons, 0), mask=k_cons < 0)),
        pa.array(time[k_rows_sorted], pa.int64(), mask=~time_valid[k_rows_sorted]),
        pa.array(reply_int[k_rows_sorted], pa.int64()), pa.array(k_included[k_pos])], fields=list(ACK))
    k_offsets = np.concatenate([[0], np.cumsum(np.bincount(k_seg, minlength=nseg))]).astype(np.int32)
    acks = pa.ListArray.from_arrays(pa.array(k_offsets), acks_struct, type=pa.list_(ACK))

    # pending at the end: the last delivery or including XACK of each segment is a delivery
    included_fact = np.zeros(len(kinds), dtype=bool)
    included_fact[np.flatnonzero(is_k)] = k_included[k_pos]
    changes = is_d | included_fact
    last_change = np.maximum.reduceat(np.where(changes, np.arange(len(kinds)), -1), starts)
    pending = (last_change >= 0) & (kinds[np.maximum(last_change, 0)] == 1)
    last_rows = f_row[np.maximum(last_change, 0)]
    acked = np.maximum.reduceat(included_fact.astype(np.int8), starts) > 0
    dl_key = np.full(nseg, -1, dtype=np.int64)
    dl_event = np.full(nseg, -1, dtype=np.int64)
    dl_id: list[str | None] = [None] * nseg
    dl_keys: list[bytes] = []
    if dl_pops:
        k_fact_pos = np.empty(len(k_row), dtype=np.int64)
        k_fact_pos[f_src[is_k]] = np.flatnonzero(is_k)
        for j, (key2, id2, ev2) in dl_pops:
            sg = seg_of[k_fact_pos[j]]
            if dl_key[sg] < 0:
                dl_key[sg], dl_event[sg], dl_id[sg] = len(dl_keys), ev2, id2
                dl_keys.append(key2)
    has_dl = dl_key >= 0
    # a removal: whether the entry was pending just before it (the last change before it is a delivery)
    is_rm = kinds == 3
    seg_start = starts[seg_of]
    change_before = np.maximum.accumulate(np.where(changes, np.arange(len(kinds)), -1))
    rm_pos = np.flatnonzero(is_rm)
    rm_pending = np.zeros(nseg, dtype=bool)
    has_rm = np.zeros(nseg, dtype=bool)
    rm_row = np.zeros(nseg, dtype=np.int64)
    prior = change_before[rm_pos]
    has_rm[seg_of[rm_pos]] = True
    rm_row[seg_of[rm_pos]] = rm_by[f_src[rm_pos]]
    rm_pending[seg_of[rm_pos]] = (prior >= seg_start[rm_pos]) & (kinds[np.maximum(prior, 0)] == 1)
    delivered = np.bincount(d_seg, minlength=nseg) > 0
    group_at_add = np.maximum.reduceat((kinds == 0).astype(np.int8), starts) > 0
    state = np.where(pending, 0, np.where(acked, 1, np.where(delivered, 2, 3)))

    # the XADD of each (trace, key, id), when it came no later than the row's first fact
    seg_rows = f_row[first]
    trip = dense(np.concatenate([trace_c[add_rows], trace_c[seg_rows]]),
                 np.concatenate([key_c[add_rows], key_c[seg_rows]]),
                 np.concatenate([add_id_c[add_rows], f_id[first]]))
    by_trip = np.full(int(trip.max()) + 1, -1, dtype=np.int64)
    by_trip[trip[: len(add_rows)]] = add_rows
    add_of = by_trip[trip[len(add_rows):]]
    in_stream = (add_of >= 0) & (removed_by[np.maximum(add_of, 0)] < 0)
    added = (add_of >= 0) & (event[np.maximum(add_of, 0)] <= f_event[first])
    add_row = np.maximum(add_of, 0)

    traces = pc.take(trace_dict, pa.array(trace_c[seg_rows]))
    nulls = pa.nulls(nseg)
    table = pa.table({
        "trace": traces, "key": pc.take(key_dict, pa.array(key_c[seg_rows])),
        "group": pc.take(group_dict, pa.array(f_group[first])), "id": pc.take(id_dict, pa.array(f_id[first])),
        "added_event": pa.array(event[add_row], pa.int32(), mask=~added),
        "added_client": pa.array(client[add_row], pa.int32(), mask=~added),
        "added_time": pa.array(time[add_row], pa.int64(), mask=~(added & time_valid[add_row])),
        "group_at_add": pa.array(group_at_add), "deliveries": deliveries, "acks": acks,
        "removed_event": pa.array(event[rm_row], pa.int32(), mask=~has_rm),
        "removed_how": pc.if_else(pa.array(has_rm), "XADD", pa.scalar(None, pa.string())),
        "removed_time": pa.array(time[rm_row], pa.int64(), mask=~(has_rm & time_valid[rm_row])),
        "removed_pending": pa.array(rm_pending),
        "dead_letter_key": pc.take(pa.array(dl_keys or [b""], pa.binary()),
                                   pa.array(np.maximum(dl_key, 0), mask=~has_dl)),
        "dead_letter_id": pa.array(dl_id, pa.string()),
        "dead_letter_event": pa.array(dl_event, pa.int32(), mask=~has_dl),
        "state": pc.take(pa.array(["pending", "acked", "delivered", "undelivered"]), pa.array(state)),
        "owner": pc.if_else(pa.array(pending), pc.take(consumer_arg, pa.array(last_rows)), pa.scalar(None,
                                                                                                     pa.binary())),
        "pending_time": pa.array(time[last_rows], pa.int64(), mask=~(pending & time_valid[last_rows])),
        "in_stream": pa.array(in_stream),
        "end_time": pc.take(pa.array([ends.get(t) for t in trace_dict.to_pylist()], pa.int64()),
                            pa.array(trace_c[seg_rows])),
        "read_event": nulls.cast(pa.int32()), "seen_event": nulls.cast(pa.int32()),
        "payload_events": nulls.cast(pa.list_(pa.int32())), "gone": pa.array(np.zeros(nseg, bool)),
    }, schema=LEDGER)
    return table, fold_rows, keep_keys, keep_traces

