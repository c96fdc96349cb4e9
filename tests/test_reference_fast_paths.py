"""The reference server's fast paths against their plain definitions.

Reads write entries in RESP straight from a node's bytes (``Node.replies``) and
walk a stream a run of live entries at a time (``Stream.forward_runs``); a PEL
removes keys from its dict alone and leaves holes in its key order
(``Pel``); a consumer group's position moves over a whole read at once when
no entry was ever deleted (``Stream.advance``). Each is checked here against
the plain form it replaces, on random data: the entry as a reply tree encoded
by the protocol module, the entry-by-entry walk, a dict walked in sorted key
order, the position moved one key at a time. The differential tests
(tests/test_reference_streams.py) check the commands built on them against the
model.
"""

from __future__ import annotations

import random

import pytest

from xspec.reference.api import Encoded
from xspec.reference.protocol import decoded, encode_reply
from xspec.reference.streams import INVALID_ENTRIES_READ, Group, Nack, Pel, Stream
from xspec.spec.resp import Array, Bulk


def _random_fields(rng: random.Random, names: list[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for name in names:
        size = rng.choice((0, 1, 5, 63, 64, 127, 128, 300, 20000))
        value = rng.choice((b"", b"-12", b"123", b"%d", bytes(rng.randrange(256) for _ in range(size))))
        out += [name, value if size < 2 else value + bytes(size)]
    return out


def _random_stream(rng: random.Random, entries: int) -> Stream:
    """Entries of a few shapes (the master's fields, other fields), IDs sharing milliseconds or not,
    some deleted, the last node left open (its bytes a bytearray)."""
    stream = Stream()
    names = [[b"f"], [b"a", b"b"], [b"%s", b"x" * 70]]
    ms, seq = 1_700_000_000_000, 0
    for _ in range(entries):
        if rng.random() < 0.3:
            ms += rng.choice((1, 2, 1000))
            seq = 0
        else:
            seq += rng.choice((1, 1, 700, 5000))
        fields = _random_fields(rng, rng.choice(names))
        stream.append(ms << 64 | seq, fields, sum(map(len, fields)), rng.choice((3, 10, 100)), 0)
    live = [node.key(i) for node, i in stream.forward(0)]
    for key in rng.sample(live, len(live) // 4):
        stream.delete(key)
    return stream


def _entry_tree(key: int, fields: tuple[bytes, ...]) -> Array:
    return Array((Bulk(b"%d-%d" % (key >> 64, key & ((1 << 64) - 1))), Array(tuple(map(Bulk, fields)))))


@pytest.mark.parametrize("seed", range(20))
def test_entry_replies_are_the_entries_encoded(seed: int) -> None:
    rng = random.Random(seed)
    stream = _random_stream(rng, rng.randrange(1, 120))
    for node in stream.nodes:
        start = rng.randrange(len(node.ms))
        end = rng.randrange(start, len(node.ms)) + 1
        got = node.replies(start, end)
        assert got == [encode_reply(_entry_tree(node.key(i), node.fields_at(i)), 2) for i in range(start, end)]
        assert node.reply_at(start) == got[0]


@pytest.mark.parametrize("seed", range(20))
def test_runs_walk_the_entries_the_entry_walk_does(seed: int) -> None:
    rng = random.Random(seed)
    stream = _random_stream(rng, rng.randrange(1, 200))
    keys = [node.key(i) for node in stream.nodes for i in range(len(node.ms)) if not node.is_dead(i)]
    for low in [0, *rng.sample(keys, min(5, len(keys))), keys[-1] + 1 if keys else 1]:
        runs = list(stream.forward_runs(low))
        assert all(0 <= start < end <= len(node.ms) for node, start, end in runs)
        assert all(node.keys(start, end) == [node.key(i) for i in range(start, end)] for node, start, end in runs)
        assert [(node, i) for node, start, end in runs for i in range(start, end)] == list(stream.forward(low))
        assert [node.key(i) for node, start, end in runs for i in range(start, end)] == [k for k in keys if k >= low]


@pytest.mark.parametrize("seed", range(10))
def test_pel_walks_as_a_sorted_dict(seed: int) -> None:
    rng = random.Random(seed)
    pel, model = Pel(), {}
    for _ in range(3000):
        op = rng.random()
        if op < 0.3:  # a read's deliveries, in order or not
            keys = sorted(rng.sample(range(2000), rng.randrange(1, 12)))
            ascending = rng.random() < 0.8
            if not ascending:
                rng.shuffle(keys)
            fresh = {k: Nack(k, 1, None) for k in keys if k not in model}
            if fresh:
                pel.add_new(fresh, ascending)
                model.update(fresh)
        elif op < 0.45:
            k = rng.randrange(2000)
            model[k] = pel.map.get(k) or Nack(k, 1, None)
            pel[k] = model[k]
        elif op < 0.75:  # acknowledgements
            keys = rng.sample(sorted(model) or [0], min(len(model), rng.randrange(1, 12))) + [rng.randrange(2000)]
            assert pel.remove(keys) == [model.pop(k, None) for k in keys]
        elif op < 0.85:
            k = rng.choice(sorted(model) or [0])
            assert pel.pop(k) is model.pop(k, None)
        else:
            low = rng.randrange(2100)
            assert list(pel.keys_from(low)) == [k for k in sorted(model) if k >= low]
        assert len(pel) == len(model)
        if model:
            assert (pel.first(), pel.last()) == (min(model), max(model))
            assert pel.first_from(rng.randrange(2000)) in (*model, None)
    assert list(pel) == sorted(model)


@pytest.mark.parametrize("entries_read", [0, 5, INVALID_ENTRIES_READ, (1 << 63) - 3])
@pytest.mark.parametrize("deleted", [False, True])
def test_a_read_moves_the_group_as_one_key_at_a_time(entries_read: int, deleted: bool) -> None:
    for fixed in (False, True):
        stream = Stream()
        for seq in range(1, 21):
            stream.append(5 << 64 | seq, [b"f", b"v"], 2, 100, 0)
        if deleted:
            stream.delete(5 << 64 | 15)
        keys = [5 << 64 | seq for seq in (3, 4, 5, 6, 16, 17)]
        at_once, one_by_one = (Group(b"g", 5 << 64 | 2, entries_read) for _ in range(2))
        stream.advance(at_once, keys, fixed)
        for k in keys:
            stream.advance(one_by_one, [k], fixed)
        assert (at_once.last_id, at_once.entries_read) == (one_by_one.last_id, one_by_one.entries_read)


def test_an_encoded_reply_decodes_to_what_the_client_received() -> None:
    entry = _entry_tree(7 << 64 | 1, (b"f", b"v"))
    for proto in (2, 3):
        wire = encode_reply(Array((entry,)), proto)
        assert decoded(Encoded([wire[:5], wire[5:]])) == Array((entry,))
    assert decoded(Bulk(b"x")) == Bulk(b"x")
