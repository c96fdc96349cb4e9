"""The node layout (models/layout.py) against a real redis-server 7.0.15.

Random XADD / XDEL / XTRIM sequences (approximate and exact, with and without
LIMIT, under many stream-node-max-entries / stream-node-max-bytes settings) run
on the server and on the model side by side, and every reply must be the
server's. After every step XINFO STREAM (length, radix-tree-keys and
radix-tree-nodes, first and last entry) must match, and so must DEBUG OBJECT's
serializedlength (the uncompressed RDB form holds every listpack, so it exposes
any byte-size error). With ``lower`` the sequences also lower last-generated-id
under tombstones with XSETID and read with XRANGE, XREVRANGE, XREAD, XREADGROUP,
XCLAIM and XAUTOCLAIM, so that out-of-order layouts (LAYOUT-1 .. LAYOUT-5)
appear; named scenarios pin each of their rules as traces. The random tests use
a private server because the shared one does not allow DEBUG.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

from tests.conftest import free_port, redis_binary
from tests.support import ReplicaTap
from xspec.models import ManualClock, Server
from xspec.models.layout import NodeLayout, rax_key
from xspec.models.rax import Rax
from xspec.models.state import Stream
from xspec.spec.ids import StreamID, successor
from xspec.spec.listpack import as_listpack_int, element_size
from xspec.spec.resp import Array, Bulk, Int, Reply, Simple
from xspec.traces.record.client import RespConnection

U64 = (1 << 64) - 1
KEY = b"s"


def info(conn: RespConnection) -> dict[bytes, Reply]:
    reply = conn.call([b"XINFO", b"STREAM", KEY])
    assert isinstance(reply, Array), reply
    items = reply.items
    return {k.value: v for k, v in zip(items[0::2], items[1::2], strict=True)}  # type: ignore[union-attr]


def ids_on_server(conn: RespConnection) -> list[StreamID]:
    reply = conn.call([b"XRANGE", KEY, b"-", b"+"])
    assert isinstance(reply, Array), reply
    out = []
    for entry in reply.items:
        raw = entry.items[0].value  # type: ignore[union-attr]
        ms, seq = raw.split(b"-")
        out.append(StreamID(int(ms), int(seq)))
    return out


def integer(reply: Reply) -> int:
    assert isinstance(reply, Int), reply
    return reply.value


class Mirror:
    """One stream on the server and on the model (a Server), driven by the same commands.

    Every command's reply must be the server's; the model's stream layout is
    what the checks compare with the server's XINFO STREAM and DEBUG OBJECT.
    """

    def __init__(self, conn: RespConnection, max_entries: int, max_bytes: int) -> None:
        self.conn = conn
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.model = Server(clock=ManualClock())
        self.client = self.model.connect()
        self.history: list[bytes] = []  # every command, for the failure message
        conn.call([b"DEL", KEY])
        for name, value in ((b"stream-node-max-entries", max_entries), (b"stream-node-max-bytes", max_bytes)):
            assert self.both([b"CONFIG", b"SET", name, b"%d" % value]) == Simple("OK")
        self.last = StreamID(0, 0)
        self.added: list[StreamID] = []  # every ID added, live or not

    def both(self, argv: list[bytes]) -> Reply:
        """Run ``argv`` on the server and on the model: the replies must be equal."""
        real = self.conn.call(argv)
        model = self.model.execute(self.client, argv).reply
        self.history.append(b" ".join(argv))
        assert model == real, f"{argv}: server {real}, model {model}\nafter: {self.history[-40:]}"
        return real

    @property
    def stream(self) -> Stream | None:
        value = self.model.dbs[0].get(KEY)
        assert value is None or isinstance(value, Stream)
        return value

    @property
    def layout(self) -> NodeLayout:
        return NodeLayout() if self.stream is None else self.stream.layout

    @property
    def live(self) -> list[StreamID]:
        """The live entries the model's walks reach, ascending."""
        return [] if self.stream is None else list(self.stream.entries)

    # -- operations -----------------------------------------------------------

    def xadd(self, entry_id: StreamID, fields: tuple[bytes, ...], trim: list[bytes] | None = None) -> None:
        argv = [b"XADD", KEY, *(trim or []), entry_id.encode(), *fields]
        assert self.both(argv) == Bulk(entry_id.encode()), argv
        self.last = entry_id
        self.added.append(entry_id)

    def xdel(self, entry_id: StreamID) -> int:
        return integer(self.both([b"XDEL", KEY, entry_id.encode()]))

    def xtrim(self, argv_tail: list[bytes]) -> int:
        return integer(self.both([b"XTRIM", KEY, *argv_tail]))

    def xsetid(self, entry_id: StreamID) -> bool:
        """XSETID to ``entry_id``; False when the server refuses it (below the top item)."""
        reply = self.both([b"XSETID", KEY, entry_id.encode()])
        if reply == Simple("OK"):
            self.last = entry_id
            return True
        return False

    # -- checks ---------------------------------------------------------------

    def check(self, full: bool = False) -> None:
        exists = integer(self.both([b"EXISTS", KEY]))
        if not exists:
            return
        fields = info(self.conn)
        self.both([b"XINFO", b"STREAM", KEY])  # length, tree sizes, IDs, first and last entry
        if full:
            self.both([b"XRANGE", KEY, b"-", b"+"])
            self.both([b"XREVRANGE", KEY, b"+", b"-"])
        if fields[b"groups"] != Int(0):
            return  # serialized_length knows no groups' encoding
        # DEBUG OBJECT's serializedlength is the RDB encoding's size; without compression it holds every
        # listpack byte for byte, next to metadata that XINFO STREAM shows.
        debug = self.conn.call([b"DEBUG", b"OBJECT", KEY])
        assert isinstance(debug, Simple), debug
        serialized = int(debug.text.split("serializedlength:")[1].split()[0])
        assert serialized == serialized_length(fields, self.layout), f"listpack bytes: {self.layout.node_sizes()}"


def rdb_length_size(n: int) -> int:
    """Bytes rdbSaveLen takes for ``n``."""
    if n < 1 << 6:
        return 1
    if n < 1 << 14:
        return 2
    return 5 if n <= 0xFFFFFFFF else 9


def parse_id(reply: Reply) -> StreamID:
    assert isinstance(reply, Bulk), reply
    ms, seq = reply.value.split(b"-")
    return StreamID(int(ms), int(seq))


def serialized_length(fields: dict[bytes, Reply], layout: NodeLayout) -> int:
    """The RDB_TYPE_STREAM_LISTPACKS_2 payload size (uncompressed) of a stream without groups."""
    nodes = layout.node_sizes()
    size = rdb_length_size(len(nodes))
    for _, _, _, lp_bytes in nodes:
        size += 1 + 16 + rdb_length_size(lp_bytes) + lp_bytes  # master ID key, then the listpack
    size += rdb_length_size(integer(fields[b"length"]))
    for name in (b"last-generated-id", b"recorded-first-entry-id", b"max-deleted-entry-id"):
        entry_id = parse_id(fields[name])
        size += rdb_length_size(entry_id.ms) + rdb_length_size(entry_id.seq)
    size += rdb_length_size(integer(fields[b"entries-added"]))
    return size + rdb_length_size(integer(fields[b"groups"]))


def default_limit(max_entries: int) -> int:
    """The LIMIT Redis uses for `~` without one: 100 nodes' worth, 10000 when unbounded, at most 1000000."""
    limit = 100 * max_entries
    if limit <= 0:
        limit = 10000
    return min(limit, 1000000)


# -- value and ID generators ---------------------------------------------------

INTEGER_TEXTS = [b"0", b"1", b"127", b"128", b"-1", b"4095", b"4096", b"-4096", b"-4097", b"32767", b"32768",
                 b"-32768", b"8388607", b"8388608", b"-8388609", b"2147483647", b"2147483648", b"-2147483649",
                 b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808", b"-9223372036854775809",
                 b"-0", b"01", b"+1", b" 1", b"1 ", b"00", b"1e3", b"0x10", b"99999999999999999999"]


def random_value(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.3:
        return rng.choice(INTEGER_TEXTS)
    if kind < 0.45:
        return b"%d" % rng.randint(-(1 << 40), 1 << 40)
    if kind < 0.8:
        return bytes(rng.choice(b"abcxyz") for _ in range(rng.randint(0, 12)))
    if kind < 0.95:
        # Around the 6-bit/12-bit string and 1-/2-byte backlen boundaries.
        return b"v" * rng.choice([62, 63, 64, 65, 124, 125, 126, 127, 200])
    return b"w" * rng.choice([4090, 4094, 4095, 4096, 4100, 16377, 16378, 16379, 16384])


def random_fields(rng: random.Random, previous: tuple[bytes, ...] | None) -> tuple[bytes, ...]:
    if previous is not None and rng.random() < 0.5:
        names = previous[0::2]  # same field names: SAMEFIELDS entries
    else:
        names = tuple(rng.choice([b"f", b"g", b"1", b"-5", b"field", b"f" * 70, b"12345678901"])
                      for _ in range(rng.randint(1, 3)))
    out: list[bytes] = []
    for name in names:
        out += [name, random_value(rng)]
    return tuple(out)


def next_id(rng: random.Random, last: StreamID) -> StreamID:
    roll = rng.random()
    if roll < 0.5 and last.seq < U64:
        return StreamID(last.ms, last.seq + rng.choice([1, 1, 2, 100, 5000, 1 << 20]))
    if roll < 0.8 and last.ms < U64 - 1000:
        return StreamID(last.ms + rng.randint(1, 300), rng.choice([0, 0, 1, 7, 1 << 33]))
    if last.ms < U64:
        # Big jumps exercise wide ms deltas (wrapping to negative int64) and deep rax splits.
        return StreamID(rng.randint(last.ms + 1, min(U64, last.ms + rng.choice([1 << 16, 1 << 40, 1 << 63]))),
                        rng.choice([0, U64, 1 << 40]))
    return StreamID(last.ms, last.seq + 1) if last.seq < U64 else last


# -- tests ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def debug_server() -> Iterator[int]:
    """A private 7.0.15 server that allows DEBUG OBJECT (the shared one does not) and saves RDB uncompressed."""
    binary = redis_binary()
    if binary is None:
        pytest.skip("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="xspec-layout-") as workdir:
        port = free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--enable-debug-command", "local", "--rdbcompression", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    RespConnection("127.0.0.1", port, timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            yield port
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.fixture
def conn(debug_server: int) -> Iterator[RespConnection]:
    c = RespConnection("127.0.0.1", debug_server)
    try:
        c.call([b"FLUSHALL"])
        yield c
    finally:
        c.close()


def test_listpack_integer_recognition():
    assert as_listpack_int(b"-9223372036854775808") == -(1 << 63)
    for text in [b"-0", b"01", b"+1", b" 1", b"", b"9223372036854775808", b"1.0"]:
        assert as_listpack_int(text) is None
    assert element_size(b"127") == 2 and element_size(b"128") == 3 and element_size(b"-1") == 3
    assert element_size(b"v" * 125) == 127 + 1 and element_size(b"v" * 126) == 128 + 2


def test_rax_shape_depends_on_history():
    """Removing a key whose node has a compressed child does not recompress (rax.c behaviour)."""
    rax = Rax()
    rax.insert(b"FOO")
    rax.insert(b"FOOBAR")
    assert rax.numnodes == 3  # "FOO" -> "BAR" -> []
    rax.remove(b"FOO")
    assert rax.numnodes == 3
    fresh = Rax()
    fresh.insert(b"FOOBAR")
    assert fresh.numnodes == 2


def test_rax_splits_and_merges_variable_length_keys():
    """Both split algorithms of raxInsert and the chain merge of raxRemove, counted by hand from rax.c.

    Stream keys all have 16 bytes, so a key never ends inside another key's path
    there; these keys do, reaching the code paths streams cannot.
    """
    rax = Rax()
    steps = [("insert", b"ANNIBALE", 2),      # "ANNIBALE" -> []
             ("insert", b"ANNIBALESCO", 3),   # the leaf grows a compressed "SCO" child
             ("insert", b"ANNIENTARE", 7),    # split at 'B'/'E': "ANNI", |B|E|, "ALE", "NTARE" and a leaf
             ("insert", b"ANNI", 7),          # the split node becomes a key
             ("insert", b"ANNIBA", 8),        # key ends inside "ALE": "A" -> "LE"
             ("remove", b"ANNIBA", 8),        # a compressed key node with 2 bytes is left as it is
             ("remove", b"ANNIENTARE", 6),    # leaf and "NTARE" freed; the split node still holds "ANNI"
             ("remove", b"ANNI", 3)]          # "ANNI", |B|, |A|, "LE" merge into "ANNIBALE"
    for op, key, numnodes in steps:
        assert getattr(rax, op)(key) is True
        assert (op, key, rax.numnodes) == (op, key, numnodes)
    assert rax.shape() == (False, True, b"ANNIBALE", ((True, True, b"SCO", ((True, False, b"", ()),)),))
    assert rax.insert(b"ANNIBALE") is False and rax.remove(b"NOPE") is False
    assert rax.insert(b"ANNIBALEX") is True and rax.numnodes == 5  # the key node "SCO" splits at its first byte
    assert rax.remove(b"ANNIBALE") is True and rax.numnodes == 5  # |S|X| keeps two children: nothing merges


def test_first_id_is_the_threshold_minid_trims_propagate(conn, debug_server):
    """XADD ... MINID ~ goes to replicas with the first ID, tombstones included (streamGetEdgeID, no skipping)."""
    tap = ReplicaTap("127.0.0.1", debug_server)
    try:
        rng = random.Random(11)
        m = Mirror(conn, 3, 0)
        checked = tombstones_first = 0
        for _ in range(200):
            roll = rng.random()
            if roll < 0.3 and len(m.live) > 1:
                m.xdel(rng.choice(m.live[:4]))
            elif roll < 0.4 and m.live:
                bound = rng.choice(m.live)
                m.xtrim([b"MINID", bound.encode()])
            else:
                entry_id = StreamID(m.last.ms + rng.randint(0, 1), m.last.seq + 1)
                bound = rng.choice(m.live) if m.live else entry_id
                limit = rng.randint(0, 6)
                m.xadd(entry_id, (b"f", b"v"), [b"MINID", b"~", bound.encode(), b"LIMIT", b"%d" % limit])
                (argv,) = [op for op in tap.take() if op[:2] == [b"XADD", KEY] and entry_id.encode() in op]
                first = m.layout.first_id()
                assert first is not None and argv[3:5] == [b"=", first.encode()], (argv, first)
                checked += 1
                tombstones_first += first not in m.live
            m.check()
        assert checked > 50 and tombstones_first > 5
    finally:
        tap.close()


def test_copies_are_independent_and_freeze_tracks_state():
    rng = random.Random(7)
    layout = NodeLayout()
    last = StreamID(1, 0)
    for _ in range(300):
        last = next_id(rng, last)
        layout.append(last, random_fields(rng, None), 3, 120)
    twin = layout.copy()
    assert twin.freeze() == layout.freeze()
    before = layout.freeze()
    removed = twin.trim(maxlen=10, minid=None, approx=False, limit=0)
    assert len(removed) == 290 and layout.freeze() == before != twin.freeze()
    again = layout.copy()
    assert again.trim(maxlen=10, minid=None, approx=False, limit=0) == removed
    assert again.freeze() == twin.freeze() and again.radix_tree_nodes == twin.radix_tree_nodes
    assert layout.trim(maxlen=None, minid=None, approx=True, limit=0) == [] and layout.freeze() == before


def run_random_sequence(conn: RespConnection, seed: int, steps: int, max_entries: int, max_bytes: int,
                        lower: bool = False) -> None:
    """Random XADD / XDEL / XTRIM steps; with ``lower`` also XSETID lowering last-generated-id (down to the
    last live entry, below tombstones), then reads and group commands, so out-of-order layouts appear."""
    rng = random.Random(seed)
    m = Mirror(conn, max_entries, max_bytes)
    previous: tuple[bytes, ...] | None = None
    for step in range(steps):
        roll = rng.random()
        if lower and roll < 0.3:
            lowered_step(rng, m)
        elif roll < 0.6 or not m.live:
            if m.last == StreamID(U64, U64):
                break
            entry_id = small_step(rng, m.last) if lower else next_id(rng, m.last)
            if entry_id is None or entry_id <= m.last:
                break
            fields = random_fields(rng, previous)
            previous = fields
            trim_roll = rng.random()
            if trim_roll < 0.75:
                m.xadd(entry_id, fields)
            elif trim_roll < 0.9:
                n = rng.randint(0, len(m.live) + 2)
                if rng.random() < 0.5:
                    limit = rng.randint(0, 3 * max(1, max_entries))
                    m.xadd(entry_id, fields, [b"MAXLEN", b"~", b"%d" % n, b"LIMIT", b"%d" % limit])
                else:
                    m.xadd(entry_id, fields, [b"MAXLEN", b"~", b"%d" % n])
            else:
                bound = rng.choice(m.live) if m.live and rng.random() < 0.8 else entry_id
                limit = rng.randint(0, 3 * max(1, max_entries))
                m.xadd(entry_id, fields, [b"MINID", b"~", bound.encode(), b"LIMIT", b"%d" % limit])
        elif roll < 0.85:
            m.xdel(rng.choice(m.live[:8]) if rng.random() < 0.5 else rng.choice(m.live))
        else:
            approx = rng.random() < 0.7
            mode = [b"~"] if approx else ([b"="] if rng.random() < 0.5 else [])
            limit = default_limit(max_entries) if approx else 0
            tail: list[bytes] = []
            if approx and rng.random() < 0.5:
                limit = rng.randint(0, 3 * max(1, max_entries))
                tail = [b"LIMIT", b"%d" % limit]
            if rng.random() < 0.5:
                n = rng.randint(0, len(m.live))
                m.xtrim([b"MAXLEN", *mode, b"%d" % n, *tail])
            else:
                pool = m.live + [m.last]
                bound = rng.choice(pool)
                if rng.random() < 0.3 and bound.seq < U64:
                    bound = StreamID(bound.ms, bound.seq + 1)
                m.xtrim([b"MINID", *mode, bound.encode(), *tail])
        m.check(full=step % 25 == 0)
    m.check(full=True)


def small_step(rng: random.Random, last: StreamID) -> StreamID | None:
    """An ID a little above ``last``, so that IDs land among the tombstones; None past the maximum ID."""
    if rng.random() < 0.6 or last.ms == U64:
        return successor(last)
    return StreamID(last.ms + 1, 0)


def lowered_step(rng: random.Random, m: Mirror) -> None:
    """One step of the ``lower`` mode: XSETID down, or a read that walks the layout."""
    stream = m.stream
    if stream is None:
        return
    if not stream.groups:  # STREAM FULL shows delivery times once there are groups
        m.both([b"XINFO", b"STREAM", KEY, b"FULL", b"COUNT", b"%d" % rng.randint(0, 3)])
    # 7.0.15 panics where streamLastValidID finds no entry while the length is not 0 (LAYOUT-4).
    panics = stream.length > 0 and not stream.entries
    pool = m.live + m.added[-12:] or [StreamID(0, 1)]
    low, high = sorted((rng.choice(pool), rng.choice(pool)))
    roll = rng.random()
    if roll < 0.3 and not panics:
        # Tombstones at the top (an exact MINID trim at a deleted last entry leaves only them), then
        # last-generated-id down to the last live entry or below everything, and a few small steps up
        # from there; sometimes on to the masters above, whose nodes a new node keyed alike replaces.
        if m.live and rng.random() < 0.5:
            m.xdel(m.live[-1])
            m.xtrim([b"MINID", m.added[-1].encode()])
        else:
            for entry_id in m.live[-rng.randint(0, 3):]:
                m.xdel(entry_id)
            if m.live and rng.random() < 0.5:
                m.xtrim([b"MINID", rng.choice(m.live[-3:]).encode()])
        if stream.length > 0 and not stream.entries:
            return  # streamLastValidID would panic
        top = stream.last_live_id()
        if rng.random() < 0.2:
            top = rng.choice(pool)
        target = top if top > StreamID(0, 0) and rng.random() < 0.5 else successor(top)
        if m.stream is None or target is None or not m.xsetid(target):
            return
        masters = [n[0] for n in m.layout.node_sizes()]
        for _ in range(rng.randint(1, 6)):
            added = small_step(rng, m.last)
            if added is None:
                return
            m.xadd(added, (b"f", b"%d" % rng.randint(0, 9)))
        for master in masters if rng.random() < 0.5 else []:
            if master > m.last:
                m.xadd(master, (b"f", b"m"))
    elif roll < 0.45:
        count = [b"COUNT", b"%d" % rng.randint(1, 4)] if rng.random() < 0.5 else []
        m.both([b"XRANGE", KEY, low.encode(), high.encode(), *count])
        m.both([b"XREVRANGE", KEY, high.encode(), low.encode(), *count])
    elif roll < 0.55 and not panics:
        m.both([b"XREAD", b"COUNT", b"%d" % rng.randint(1, 5), b"STREAMS", KEY, low.encode()])
    elif roll < 0.85 and not stream.groups:
        m.both([b"XGROUP", b"CREATE", KEY, b"g", b"0"])
    elif roll < 0.75 and not panics:
        if rng.random() < 0.3:
            m.both([b"XGROUP", b"SETID", KEY, b"g", low.encode()])
        m.both([b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"%d" % rng.randint(1, 5), b"STREAMS", KEY, b">"])
        m.both([b"XINFO", b"GROUPS", KEY])
        m.both([b"XPENDING", KEY, b"g"])
    elif roll < 0.85:
        m.both([b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", KEY, b"0"])
        m.both([b"XCLAIM", KEY, b"g", b"d", b"0", low.encode(), high.encode()])
        m.both([b"XAUTOCLAIM", KEY, b"g", b"c", b"0", b"0", b"COUNT", b"3"])
    else:
        m.xdel(rng.choice(pool))


CONFIGS = [(100, 4096), (4, 0), (1, 0), (0, 0), (3, 200), (0, 1), (0, 60), (10, 100), (7, 500), (2, 4096),
           (0, 300), (50, 30), (5, 3_000_000_000)]


@pytest.mark.parametrize(("max_entries", "max_bytes"), CONFIGS)
def test_random_sequences_match_server(conn, max_entries, max_bytes):
    for seed in range(3):
        run_random_sequence(conn, seed * 1000 + max_entries * 7 + max_bytes, 150, max_entries, max_bytes)


@pytest.mark.parametrize(("max_entries", "max_bytes"), [(4, 0), (2, 0), (3, 200), (1, 0), (5, 100), (0, 90)])
def test_random_sequences_with_lowered_last_id_match_server(conn, max_entries, max_bytes):
    """XSETID under tombstones disorders the layout: every reply of the model must still be the server's."""
    for seed in range(4):
        run_random_sequence(conn, seed * 31 + max_entries, 150, max_entries, max_bytes, lower=True)


def test_minid_exact_trim_can_leave_a_node_without_live_entries(conn):
    """A node whose last entry is a tombstone >= MINID keeps its place with zero live entries."""
    m = Mirror(conn, 4, 0)
    for seq in range(1, 5):
        m.xadd(StreamID(1, seq), (b"f", b"v"))
    m.xadd(StreamID(2, 1), (b"f", b"v"))
    m.xdel(StreamID(1, 4))
    m.xtrim([b"MINID", b"1-4"])
    m.check(full=True)
    assert m.layout.radix_tree_keys == 2 and m.live == [StreamID(2, 1)]
    assert m.layout.first_id() == StreamID(1, 1)  # a tombstone
    m.xtrim([b"MINID", b"~", b"2-0"])
    m.check(full=True)
    assert m.layout.radix_tree_keys == 1 and m.layout.first_id() == StreamID(2, 1)


def test_appending_to_a_tail_node_without_live_entries(conn):
    """The zero-live node stays the tail: XADD fills it, and its next XDEL of a live entry frees it."""
    m = Mirror(conn, 5, 0)
    for seq in range(1, 4):
        m.xadd(StreamID(1, seq), (b"f", b"v"))
    m.xdel(StreamID(1, 3))
    m.xtrim([b"MINID", b"1-3"])
    m.check(full=True)
    assert (m.live, m.layout.radix_tree_keys) == ([], 1)
    m.xadd(StreamID(1, 4), (b"g", b"1"))
    m.xadd(StreamID(1, 5), (b"f", b"1"))  # count is 3 deleted + 2 live: the node is full now
    m.xadd(StreamID(1, 6), (b"f", b"1"))
    m.check(full=True)
    assert m.layout.radix_tree_keys == 2
    m.xdel(StreamID(1, 4))
    m.xdel(StreamID(1, 5))
    m.check(full=True)
    assert m.layout.radix_tree_keys == 1


def test_deleted_counter_growth_changes_node_bytes(conn):
    """Counters crossing 127 take a wider integer encoding, which moves the byte-limit boundary."""
    m = Mirror(conn, 0, 3000)
    ms = 1
    for _ in range(300):
        m.xadd(StreamID(ms, 0), (b"f", b"1"))
        ms += 1
    for entry_id in list(m.live[1:150]):
        m.xdel(entry_id)
        m.check()
    for _ in range(60):
        m.xadd(StreamID(ms, 0), (b"f", b"1"))
        ms += 1
        m.check()
    m.check(full=True)


def test_rax_keys_differing_in_low_bytes_only(conn):
    """Masters that share long key prefixes build deep compressed chains; removals recompress them."""
    m = Mirror(conn, 1, 0)
    for entry_id in [StreamID(5, 1), StreamID(5, 2), StreamID(5, 256), StreamID(5, 1 << 40), StreamID(6, 0),
                     StreamID(1 << 56, 0), StreamID(1 << 56, 1), StreamID(U64, 0), StreamID(U64, U64)]:
        m.xadd(entry_id, (b"f", b"v"))
        m.check()
    for entry_id in [StreamID(5, 2), StreamID(1 << 56, 0), StreamID(5, 1), StreamID(U64, U64), StreamID(6, 0)]:
        m.xdel(entry_id)
        m.check()
    m.check(full=True)


def test_model_appends_fast():
    """The model must keep up with >= 100k XADDs per second (best of three runs, so a busy machine does not flake)."""
    fields = (b"field", b"12345", b"other", b"some text")
    n = 20_000
    best = 0.0
    for _ in range(3):
        layout = NodeLayout()
        start = time.perf_counter()
        for i in range(n):
            layout.append(StreamID(1_700_000_000_000 + i // 3, i % 3), fields, 100, 4096)
            layout.trim(maxlen=1000, minid=None, approx=True, limit=10000)
        best = max(best, n / (time.perf_counter() - start))
    assert best > 100_000, f"{best:.0f} appends/s"
    assert layout.radix_tree_keys > 1 and rax_key(StreamID(1, 2)) == bytes(7) + b"\x01" + bytes(7) + b"\x02"


# -- out-of-order layouts: XSETID below tombstones (LAYOUT-1 .. LAYOUT-5), checked as traces ---------------


def tombstoned_node(s, ids: tuple[str, ...] = ("5-0", "6-0", "8-0")) -> None:
    """A node holding only tombstones (an exact MINID trim at its last, deleted, entry) and
    last-generated-id lowered to 1-0 under them: the start of every out-of-order layout."""
    for entry_id in ids:
        s.call(1, "XADD", "s", entry_id, "f", "v")
    s.call(1, "XDEL", "s", ids[-1])
    s.call(1, "XTRIM", "s", "MINID", ids[-1])
    assert s.call(1, "XSETID", "s", "1-0") == Simple("OK")


def test_xadd_appends_to_the_node_with_the_highest_master(redis):
    """LAYOUT-1: 2-0 fills the tombstoned node (master 5-0); while that node is full and has the
    highest master, 3-0 opens a node of its own, and 6-0 opens one that 7-0 joins: 3 nodes, 8 rax nodes."""
    s = redis.scenario(config={"stream-node-max-entries": "4"})
    tombstoned_node(s)
    for entry_id in ("2-0", "3-0", "6-0", "7-0"):
        s.call(1, "XADD", "s", entry_id, "f", entry_id)
    reply = s.call(1, "XINFO", "STREAM", "s")
    assert isinstance(reply, Array) and reply.items[3] == Int(3) and reply.items[5] == Int(8), reply
    s.call(1, "XRANGE", "s", "-", "+")  # walk order: 3-0, 2-0, 6-0, 7-0
    s.check()


def test_reverse_walk_starts_at_the_last_node_at_or_below_the_end(redis):
    """LAYOUT-2: XREVRANGE starts at the last node whose master is <= the end, so entries that sit in a
    node with a higher master are missed (7-0 and 6-0 only); forward walks skip and stop the same way."""
    s = redis.scenario(config={"stream-node-max-entries": "5"})
    tombstoned_node(s, ("10-0", "11-0", "12-0"))
    for entry_id in ("2-0", "3-0", "6-0", "7-0"):
        s.call(1, "XADD", "s", entry_id, "f", entry_id)
    assert len(s.call(1, "XREVRANGE", "s", "9", "-").items) == 2  # type: ignore[union-attr]
    s.call(1, "XREVRANGE", "s", "+", "-")
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XRANGE", "s", "3", "6", "COUNT", "1")
    s.call(1, "XRANGE", "s", "6", "+")
    s.call(1, "XREAD", "STREAMS", "s", "2-0")
    s.call(1, "XINFO", "STREAM", "s")  # first-entry and last-entry come from the two walks
    s.call(1, "XINFO", "STREAM", "s", "FULL", "COUNT", "2")
    s.call(1, "XGROUP", "CREATE", "s", "g", "0")
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "COUNT", "3", "STREAMS", "s", ">")  # 2-0, 3-0, 6-0
    s.call(1, "XINFO", "GROUPS", "s")  # last-delivered-id stayed at the highest delivered ID
    s.call(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    s.call(1, "XCLAIM", "s", "g", "d", "0", "2-0", "3-0", "7-0")
    s.call(1, "XDEL", "s", "6-0", "2-0")
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XSETID", "s", "3-0")  # streamLastValidID: the reverse walk's first live entry, 7-0
    s.check()


def test_a_new_node_with_a_used_master_replaces_the_old_one(redis):
    """LAYOUT-4: 5-0 opens a node keyed like the tombstoned node holding 2-0; raxInsert replaces it, so
    2-0 is out of every walk (XRANGE, XDEL) while XLEN still counts it."""
    s = redis.scenario(config={"stream-node-max-entries": "4"})
    tombstoned_node(s)
    for entry_id in ("2-0", "3-0", "5-0"):
        s.call(1, "XADD", "s", entry_id, "f", entry_id)
    assert s.call(1, "XDEL", "s", "2-0") == Int(0)
    assert s.call(1, "XLEN", "s") == Int(3)
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XTRIM", "s", "MINID", "~", "1")  # XTRIM-10: removes nothing, so the first ID stays the lost 2-0
    s.call(1, "XINFO", "STREAM", "s")
    s.call(1, "XADD", "s", "5-1", "f", "v")
    s.call(1, "XADD", "s", "MAXLEN", "2", "5-2", "f", "v")  # the lost entry still counts against MAXLEN
    s.call(1, "XRANGE", "s", "-", "+")
    s.call(1, "XINFO", "STREAM", "s")
    s.check()


def test_exact_minid_trim_stops_at_a_tombstone_above_the_bound(redis):
    """LAYOUT-5: the trim walks the node from its first entry, so the tombstone 5-0 >= MINID 3-0 ends it
    before the live 2-0 below the bound (even though every entry before 2-0 is a tombstone); MINID 4-0 is
    above the node's last entry, the tombstone 3-0, and removes the node whole."""
    s = redis.scenario(config={"stream-node-max-entries": "6"})
    for entry_id in ("5-0", "6-0", "8-0", "9-0"):
        s.call(1, "XADD", "s", entry_id, "f", "v")
    s.call(1, "XDEL", "s", "5-0", "6-0", "9-0")
    s.call(1, "XTRIM", "s", "MINID", "9-0")  # 8-0 goes: the node holds tombstones only
    s.call(1, "XSETID", "s", "1-0")
    for entry_id in ("2-0", "3-0"):
        s.call(1, "XADD", "s", entry_id, "f", entry_id)
    s.call(1, "XDEL", "s", "3-0")
    assert s.call(1, "XTRIM", "s", "MINID", "3-0") == Int(0)
    s.call(1, "XRANGE", "s", "-", "+")
    assert s.call(1, "XTRIM", "s", "MINID", "4-0") == Int(1)
    s.call(1, "XINFO", "STREAM", "s")
    s.check()
