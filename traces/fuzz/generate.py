"""Random command sequences over the whole stream API, for differential testing and fuzzing.

A :class:`Generator` writes a sequence of :class:`Step` s: which (logical)
client sends which command. The universes of keys, groups, consumers and
clients are small, so commands meet each other's data: a group created by
one step is read by the next, a consumer's PEL is claimed by another, a
stream is overwritten by ``SET`` or renamed. Most commands are valid and
most explicit IDs are increasing (so XADD mostly succeeds); a tunable share
is invalid (wrong arity, bad numbers and IDs, unknown options, options in
odd orders) to exercise the order of the server's checks.

Arguments are ``bytes``, except :class:`RelativeTime`, a placeholder for an
absolute Unix time in milliseconds (``XCLAIM ... TIME``, or the milliseconds
of an ID near the clock) that a runner resolves against its clock when it
sends the command (:func:`resolve`).

Besides commands, a sequence holds pauses (time passes: idle times grow,
short blocks time out), MULTI ... EXEC bursts by one client, and pipelined
steps (sent without waiting for the reply). :data:`PROFILES` names
weightings that stress one area (blocking, node layout, PELs, lag, several
databases, pipelining, clock IDs, large streams).

The sequence does not depend on replies: it can be replayed, cut down
(shrinking) or run against any server. :func:`describe` prints a step the
way a person would type it.

    gen = Generator(random.Random(7), Profile(clients=3))
    steps = gen.sequence(50)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

U64_MAX = 18446744073709551615
I64_MAX = 9223372036854775807


@dataclass(frozen=True)
class RelativeTime:
    """An absolute time in ms, ``offset`` ms from the moment the command is sent, followed by
    ``suffix`` (``b"-0"``, ``b"-*"``: an ID near the clock)."""

    offset: int
    suffix: bytes = b""


Arg = bytes | RelativeTime


@dataclass(frozen=True)
class Step:
    """Client ``client`` sends ``argv``; or, when ``argv`` is empty, nobody sends anything for ``pause`` ms.

    ``pipelined``: the client sends the command without waiting for its reply (it reads it later,
    at the latest before its next command that is not pipelined).
    """

    client: int
    argv: tuple[Arg, ...]
    pause: int = 0
    pipelined: bool = False

    @property
    def may_block(self) -> bool:
        """XREAD/XREADGROUP with a BLOCK option (outside MULTI it may block)."""
        name = self.argv[0] if self.argv else None
        return isinstance(name, bytes) and name.upper() in (b"XREAD", b"XREADGROUP") and any(
            isinstance(a, bytes) and a.upper() == b"BLOCK" for a in self.argv[1:])

    @property
    def closes(self) -> bool:
        """QUIT: the server closes the connection after replying."""
        name = self.argv[0] if self.argv else None
        return isinstance(name, bytes) and name.upper() == b"QUIT"


@dataclass(frozen=True)
class Profile:
    """Knobs of a generated sequence.

    ``exclude`` names command families (keys of :data:`FAMILIES`) left out,
    e.g. to keep a known divergence out of a regression suite.
    """

    clients: int = 3
    # share of sequences in clock mode: XADD mostly with ``*`` (explicit IDs then fail as too small);
    # other sequences use explicit, mostly increasing IDs and ``*`` rarely
    clock_mode: float = 0.25
    # share of commands deliberately malformed
    invalid: float = 0.15
    # allow blocking XREAD/XREADGROUP
    blocking: bool = True
    # allow commands whose replies depend on the clock (idle times, min-idle-time > 0, TIME)
    timing: bool = True
    # counts and thresholds near the 64-bit limits (ENTRIESADDED, RETRYCOUNT, COUNT ...)
    extreme_numbers: bool = True
    # share of commands pipelined (sent without waiting for the reply)
    pipeline: float = 0.05
    # share of XADDs with a trimming option
    trim: float = 0.25
    # share of XADDs whose fields and values come from the layout pool (listpack encodings, long values)
    payloads: float = 0.15
    # share of min-idle and IDLE arguments equal to the time the sequence has paused since one of the
    # last deliveries (on a virtual clock exactly an idle time: where ``<`` and ``<=`` part)
    idle_matches: float = 0.0
    # (family, weight) pairs replacing the default weights of :data:`FAMILY_WEIGHTS`
    weights: tuple[tuple[str, int], ...] = ()
    exclude: frozenset[str] = frozenset()

    def family_weights(self) -> dict[str, int]:
        weights = dict(FAMILY_WEIGHTS)
        weights.update(self.weights)
        return {f: w for f, w in weights.items() if w > 0 and f not in self.exclude}


KEYS: tuple[bytes, ...] = (b"s", b"t", b"", b"k\x00\xff")
GROUPS: tuple[bytes, ...] = (b"g", b"h", b"")
CONSUMERS: tuple[bytes, ...] = (b"alice", b"bob", b"", b"\xfe")
JUNK: tuple[bytes, ...] = (
    b"", b"-1", b"abc", b"0", b"1", b"18446744073709551616", b"9223372036854775808",
    b"-9223372036854775809", b"9223372036854775807", b" 1", b"1.5", b"0x10", b"+", b"-", b"$", b">", b"*",
    b"COUNT", b"STREAMS", b"JUSTID",
)
PAYLOADS: tuple[bytes, ...] = (
    # integers at the edges of the listpack integer encodings, numbers that are not canonical, sizes at
    # the edges of the string length encodings
    b"0", b"127", b"128", b"-4096", b"4095", b"4096", b"32767", b"-32769", b"8388607", b"8388608",
    b"2147483647", b"-2147483649", b"9223372036854775807", b"9223372036854775808", b"01", b"-0", b"1.0",
    b"x" * 63, b"x" * 64, b"y" * 200, b"z" * 4095, b"f", b"v",
)
SPECIAL_IDS: tuple[bytes, ...] = (
    b"0", b"0-0", b"0-1", b"-", b"+", b"$", b">", b"18446744073709551615-18446744073709551615",
    b"18446744073709551615", b"18446744073709551615-0", b"18446744073709551614-18446744073709551615",
    b"1-18446744073709551615", b"18446744073709551616-0", b"1-18446744073709551616",
    b" 1-1", b"+2-0", b"01-01", b"1--1", b"1-", b"-1", b"1.5", b"abc", b"1-2-3", b"", b"*", b"1-*",
)

FAMILY_WEIGHTS: dict[str, int] = {
    "xadd": 22, "xlen": 2, "xrange": 6, "xdel": 4, "xtrim": 4, "xsetid": 3,
    "xgroup": 9, "xreadgroup": 12, "xread": 5, "xack": 5, "xpending": 6, "xclaim": 7,
    "xautoclaim": 5, "xinfo": 6, "keyspace": 5, "multi": 4, "watch": 2, "connection": 3, "config": 1,
    "pause": 2,  # time passes: idle times grow, short blocks time out
    "transaction": 2,  # MULTI, several writes, EXEC in a row: many keys signalled at once
    "burst": 0,  # many XADDs and one group read of them all (opt in: a profile gives it a weight)
    "contend": 0,  # several clients block on one key, another writes to it (opt in)
    # strings, hashes and key expiry (spec/rules/strings.md, hashes.md, expiry.md; opt in: profile "types")
    "strings": 0, "hashes": 0, "expiry": 0,
}
# Keys the string, hash and expiry families write to, apart from the streams' keys (and one of them).
VALUE_KEYS: tuple[bytes, ...] = (b"a", b"b", b"h", b"s")
NUMBERS: tuple[bytes, ...] = (b"0", b"1", b"-1", b"10", b"1.5", b"-0.25", b"1e3", b"x", b"9223372036854775807",
                              b"-9223372036854775808", b"", b"inf")


def _pick(rng: random.Random, items: Sequence[bytes]) -> bytes:
    return items[rng.randrange(len(items))]


def _num(n: int) -> bytes:
    return str(n).encode()


@dataclass
class Generator:
    """Writes random command sequences; see the module docstring."""

    rng: random.Random
    profile: Profile = field(default_factory=Profile)
    ms: int = 1  # the next explicit ID's milliseconds; mostly increasing
    seq: int = 0
    issued: list[bytes] = field(default_factory=list)  # explicit IDs handed out so far
    in_multi: set[int] = field(default_factory=set)
    # groups the sequence has probably created so far, per key (a guess: replies are not seen)
    groups: dict[bytes, set[bytes]] = field(default_factory=dict)
    clock: bool = False
    paused: int = 0  # ms of pauses so far
    # ``paused`` when each of the last few commands that may deliver or claim entries was generated
    deliveries: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock = self.chance(self.profile.clock_mode)

    def sequence(self, n: int) -> list[Step]:
        """``n`` steps; most sequences start by filling ``s`` and creating group ``g`` on it."""
        table = self.profile.family_weights()
        families, weights = list(table), list(table.values())
        steps = self.prelude() if self.chance(0.8) and n >= 4 else []
        while len(steps) < n:
            steps += self.next_steps(self.rng.choices(families, weights)[0])
        return steps

    def prelude(self) -> list[Step]:
        """Fill ``s`` with a few entries and create group ``g`` on it."""
        steps = [Step(1, (b"XADD", KEYS[0], self.next_id(), b"f", b"v")) for _ in range(self.rng.randrange(1, 4))]
        steps.append(Step(1, (b"XGROUP", b"CREATE", KEYS[0], GROUPS[0], b"0")))
        self.groups[KEYS[0]] = {GROUPS[0]}
        return steps

    def next_steps(self, family: str) -> list[Step]:
        """The steps of one command of ``family`` (none, or several for bursts and transactions)."""
        client = self.pick_client(family)
        if client in self.in_multi and self.rng.random() < 0.25:
            return [self._end_multi(client)]
        if family == "pause":
            pause = self.rng.choice([1, 2, 3, 5, 10, 25])
            self.paused += pause
            return [Step(0, (), pause)]
        if family == "transaction":
            return self.transaction(client) if client not in self.in_multi else []
        if family == "burst":
            return self.burst(client)
        if family == "contend":
            return self.contend(client)
        argv = FAMILIES[family](self, client)
        if family in ("xreadgroup", "xclaim", "xautoclaim"):
            self.delivered()
        if self.rng.random() < self.profile.invalid * 0.4:
            argv = self._mutate(argv)
        return [Step(client, tuple(argv), pipelined=self.chance(self.profile.pipeline))]

    def pick_client(self, family: str) -> int:
        """Any client; with three or more, the last one mostly does blocking reads and little else,
        so its blocked reads last while the others write."""
        clients = self.profile.clients
        if clients < 3:
            return self.rng.randrange(1, clients + 1)
        if family in ("xread", "xreadgroup") and self.profile.blocking and self.chance(0.4):
            return clients
        if self.chance(0.9):
            return self.rng.randrange(1, clients)
        return clients

    # -- pieces -------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def key(self) -> bytes:
        return _pick(self.rng, KEYS) if self.chance(0.35) else KEYS[0]

    def group(self) -> bytes:
        return _pick(self.rng, GROUPS) if self.chance(0.4) else GROUPS[0]

    def key_group(self) -> tuple[bytes, bytes]:
        """A key and group for a group command: mostly a pair that probably exists."""
        pairs = [(k, g) for k, gs in self.groups.items() for g in sorted(gs)]
        if pairs and self.chance(0.8):
            return self.rng.choice(pairs)
        return self.key(), self.group()

    def forget(self, key: bytes | None = None) -> None:
        """The key (every key when None) was probably deleted or overwritten."""
        if key is None:
            self.groups.clear()
        else:
            self.groups.pop(key, None)

    def consumer(self) -> bytes:
        return _pick(self.rng, CONSUMERS)

    def junk(self) -> bytes:
        """A malformed or out-of-range argument."""
        value = _pick(self.rng, JUNK)
        if value == b"%d" % I64_MAX and not self.profile.extreme_numbers:
            return b"-1"
        return value

    def small(self) -> bytes:
        if self.chance(self.profile.invalid * 0.3):
            return self.junk()
        if self.profile.extreme_numbers and self.chance(0.03):
            return self.rng.choice([b"9223372036854775807", b"-9223372036854775808", b"4611686018427387904",
                                    b"1000000", b"-2"])
        return _num(self.rng.choice([0, 1, 1, 2, 2, 3, 5, 10]))

    def idle(self) -> bytes:
        """A min-idle or IDLE argument: 0 unless timing-dependent replies are allowed."""
        if self.chance(self.profile.invalid * 0.2):
            return self.junk()
        if not self.profile.timing:
            return self.rng.choice([b"0", b"0", b"100000000"])
        if self.profile.idle_matches and self.chance(self.profile.idle_matches):
            idle_times = sorted({self.paused - d for d in self.deliveries if d < self.paused})
            if idle_times:
                return _num(self.rng.choice(idle_times))
        return _num(self.rng.choice([0, 0, 0, 1, 2, 5, 20, 100000000]))

    def delivered(self) -> None:
        """A command that may deliver or claim entries was generated: remember when (for :meth:`idle`)."""
        self.deliveries = [*self.deliveries[-5:], self.paused]

    def next_id(self) -> bytes:
        """A fresh explicit ID, larger than every one handed out before."""
        if self.chance(0.3):
            self.seq += 1
        else:
            self.ms += self.rng.choice([1, 1, 2, 5])
            self.seq = self.rng.choice([0, 0, 1])
        new = b"%d-%d" % (self.ms, self.seq)
        self.issued.append(new)
        return new

    def known_id(self) -> bytes:
        """An ID likely to exist (or lie between existing ones)."""
        if self.issued and self.chance(0.7):
            return self.rng.choice(self.issued[-12:])
        if self.chance(0.5):
            return b"%d-%d" % (self.rng.randrange(0, self.ms + 2), self.rng.choice([0, 0, 1, 2]))
        return _num(self.rng.randrange(0, self.ms + 2))  # ms only

    def any_id(self) -> bytes:
        r = self.rng.random()
        if r < self.profile.invalid * 0.5:
            return _pick(self.rng, SPECIAL_IDS)
        if r < 0.2:
            return _pick(self.rng, (b"0", b"0-0", b"-", b"+", b"18446744073709551615-18446744073709551615"))
        return self.known_id()

    def add_id(self) -> Arg:
        r = self.rng.random()
        auto = 0.7 if self.clock else 0.005
        if r < auto:
            if self.clock and self.chance(0.15):  # an explicit ID just behind or ahead of the clock
                return RelativeTime(self.rng.choice([-20, -2, -1, 0, 1, 2, 20]), self.rng.choice([b"-0", b"-*", b"-5"]))
            return b"*"
        if r < auto + 0.05:
            return b"%d-*" % self.rng.choice([self.ms, self.ms, self.ms + 1, 0, U64_MAX if self.chance(0.2) else 1])
        if r < auto + 0.05 + self.profile.invalid * 0.5:
            return _pick(self.rng, SPECIAL_IDS)
        if r < 0.9:
            return self.next_id()
        return self.known_id()  # usually too small: an error

    def range_bound(self, start: bool) -> bytes:
        r = self.rng.random()
        if r < 0.3:
            return b"-" if start else b"+"
        if r < 0.45:
            return b"(" + self.known_id()
        if r < 0.5:
            return self.rng.choice([b"(-", b"(+", b"(0-0", b"(18446744073709551615-18446744073709551615",
                                    b"(0", b"-", b"+"])
        return self.any_id()

    def fields(self) -> list[bytes]:
        n = self.rng.choice([1, 1, 1, 2, 3])
        out: list[bytes] = []
        for _ in range(n):
            if self.chance(self.profile.payloads):
                out += [_pick(self.rng, PAYLOADS), _pick(self.rng, PAYLOADS)]
            else:
                out += [self.rng.choice([b"f", b"g", b"", b"\x00"]), self.rng.choice([b"v", b"1", b"", b"-3"])]
        if self.chance(self.profile.invalid * 0.2):
            out.pop()  # odd number of field/value arguments
        return out

    def trim_args(self) -> list[bytes]:
        strategy = self.rng.choice([b"MAXLEN", b"MINID", b"maxlen", b"minid"]) \
            if self.chance(0.9) else _pick(self.rng, (b"MAXLENX", b"LIMIT"))
        out = [strategy]
        approx = self.rng.choice([None, None, b"=", b"~"])
        if approx is not None:
            out.append(approx)
        if strategy.upper() == b"MINID":
            out.append(self.known_id() if self.chance(0.85) else _pick(self.rng, SPECIAL_IDS))
        else:
            length = _num(self.rng.choice([0, 1, 2, 3, 5, 5, 8, 10, 20, 20]))
            out.append(length if self.chance(0.9) else self.junk())
        if self.chance(0.25 if approx == b"~" else 0.08):
            out += [b"LIMIT", self.rng.choice([b"0", b"1", b"2", b"100", b"-1", b"x"])]
        return out

    def _mutate(self, argv: list[Arg]) -> list[Arg]:
        """A small random corruption: drop, repeat or replace one argument, or add a junk one."""
        argv = list(argv)
        if len(argv) < 2:
            return argv
        i = self.rng.randrange(1, len(argv))
        how = self.rng.randrange(4)
        if how == 0:
            del argv[i]
        elif how == 1:
            argv.insert(i, argv[i])
        elif how == 2:
            argv[i] = self.junk()
        else:
            argv.insert(self.rng.randrange(1, len(argv) + 1), self.junk())
        return argv

    # -- families ------------------------------------------------------------------
    def xadd(self, client: int) -> list[Arg]:
        argv: list[Arg] = [b"XADD", self.key()]
        opts: list[list[bytes]] = []
        if self.chance(0.1):
            opts.append([b"NOMKSTREAM"])
        if self.chance(self.profile.trim):
            opts.append(self.trim_args())
        if len(opts) > 1 and self.chance(0.3):
            opts.reverse()
        for o in opts:
            argv += o
        return argv + [self.add_id(), *self.fields()]

    def xlen(self, client: int) -> list[Arg]:
        return [b"XLEN", self.key()]

    def xrange(self, client: int) -> list[Arg]:
        name = self.rng.choice([b"XRANGE", b"XREVRANGE"])
        lo, hi = self.range_bound(True), self.range_bound(False)
        if name == b"XREVRANGE":
            lo, hi = hi, lo
        argv: list[Arg] = [name, self.key(), lo, hi]
        if self.clock and self.chance(0.3):  # ranges that cut the clock-generated IDs
            argv[self.rng.choice([2, 3])] = RelativeTime(self.rng.choice([-30, -5, -1, 0]), self.rng.choice([b"", b"-0"]))
        if self.chance(0.35):
            argv += [b"COUNT", self.small()]
        return argv

    def xdel(self, client: int) -> list[Arg]:
        return [b"XDEL", self.key(), *[self.any_id() for _ in range(self.rng.choice([1, 1, 2, 3]))]]

    def xtrim(self, client: int) -> list[Arg]:
        return [b"XTRIM", self.key(), *self.trim_args()]

    def xsetid(self, client: int) -> list[Arg]:
        last = self.known_id() if self.chance(0.5) else self.any_id()
        if self.chance(0.15):
            last = self.next_id()
        argv: list[Arg] = [b"XSETID", self.key(), last]
        if self.chance(0.3):
            argv += [b"ENTRIESADDED", self.small() if self.chance(0.5) else _num(self.rng.randrange(0, 30))]
        if self.chance(0.3):
            argv += [b"MAXDELETEDID", self.any_id()]
        return argv

    def xgroup(self, client: int) -> list[Arg]:
        sub = self.rng.choices([b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER", b"HELP",
                                b"create", b"BOGUS"], [10, 4, 2, 3, 3, 1, 1, 1])[0]
        if not any(self.groups.values()) and self.chance(0.7):
            sub = b"CREATE"
        k, g = self.key_group() if sub in (b"SETID", b"DESTROY", b"DELCONSUMER") else (self.key(), self.group())
        if sub.upper() == b"CREATE":
            self.groups.setdefault(k, set()).add(g)
            start = self.rng.choice([b"$", b"0", b"0", self.known_id(), self.any_id()])
            argv: list[Arg] = [b"XGROUP", sub, k, g, start]
            if self.chance(0.6):
                argv.append(b"MKSTREAM")
            if self.chance(0.2):
                argv += [b"ENTRIESREAD", self.rng.choice([b"0", b"1", b"3", b"-1", b"-2", b"x", b"100"])]
            return argv
        if sub == b"SETID":
            argv = [b"XGROUP", sub, k, g, self.rng.choice([b"$", b"0", self.known_id(), self.any_id()])]
            if self.chance(0.25):
                argv += [b"ENTRIESREAD", self.rng.choice([b"0", b"2", b"-1", b"-5", b"x"])]
            return argv
        if sub == b"DESTROY":
            self.groups.get(k, set()).discard(g)
            return [b"XGROUP", sub, k, g]
        if sub in (b"CREATECONSUMER", b"DELCONSUMER"):
            return [b"XGROUP", sub, k, g, self.consumer()]
        if sub == b"HELP":
            return [b"XGROUP", sub]
        return [b"XGROUP", sub, k, g]

    def _streams(self, ids: Callable[[], bytes], first: bytes | None = None) -> list[bytes]:
        n = 1 if self.chance(0.75) else 2
        keys = [first or self.key()] + [self.key() for _ in range(n - 1)]
        out = [b"STREAMS", *keys, *[ids() for _ in keys]]
        if self.chance(self.profile.invalid * 0.15):
            out.pop()  # unbalanced
        return out

    def _block(self, client: int) -> list[bytes]:
        blocker = self.profile.clients >= 3 and client == self.profile.clients
        if not self.profile.blocking or not self.chance(0.8 if blocker else 0.3):
            return []
        return [b"BLOCK", self.rng.choice([b"0", b"1", b"5", b"20", b"100000", b"-1", b"x", b"0", b"2", b"10",
                                           b"9223372036854775807", b"99999999999999", b"1.5"])]

    def xreadgroup(self, client: int) -> list[Arg]:
        k, g = self.key_group()
        argv: list[Arg] = [b"XREADGROUP", b"GROUP", g, self.consumer()]
        opts: list[list[bytes]] = []
        if self.chance(0.4):
            opts.append([b"COUNT", self.small()])
        if self.chance(0.2):
            opts.append([b"NOACK"])
        block = self._block(client)
        if block:
            opts.append(block)
        self.rng.shuffle(opts)
        for o in opts:
            argv += o
        return argv + self._streams(lambda: b">" if self.chance(0.65) else self.any_id(), k)

    def xread(self, client: int) -> list[Arg]:
        argv: list[Arg] = [b"XREAD"]
        if self.chance(0.4):
            argv += [b"COUNT", self.small()]
        block = self._block(client)
        argv += block
        if block and self.chance(0.7):
            return argv + self._streams(lambda: b"$")
        return argv + self._streams(lambda: self.rng.choice([b"$", b"0", b"0-0", self.any_id()]))

    def xack(self, client: int) -> list[Arg]:
        return [b"XACK", *self.key_group(), *[self.any_id() for _ in range(self.rng.choice([1, 1, 2, 3]))]]

    def xpending(self, client: int) -> list[Arg]:
        argv: list[Arg] = [b"XPENDING", *self.key_group()]
        if self.chance(0.35):
            return argv
        if self.chance(0.3):
            argv += [b"IDLE", self.idle()]
            if self.profile.idle_matches and self.chance(0.5):  # the whole PEL, to see the idle filter at work
                return argv + [b"-", b"+", b"100"]
        argv += [self.range_bound(True), self.range_bound(False), self.small()]
        if self.chance(0.4):
            argv.append(self.consumer())
        return argv

    def xclaim(self, client: int) -> list[Arg]:
        argv: list[Arg] = [b"XCLAIM", *self.key_group(), self.consumer(), self.idle()]
        argv += [self.any_id() for _ in range(self.rng.choice([1, 1, 2, 3]))]
        opts: list[list[Arg]] = []
        if self.chance(0.2):
            opts.append([b"IDLE", self.idle()])
        if self.chance(0.15 if self.profile.timing else 0.0):
            opts.append([b"TIME", RelativeTime(self.rng.choice([-100000, -10, 0, 10, 100000]))])
        if self.chance(0.08):
            opts.append([b"TIME", self.rng.choice([b"0", b"1000", b"-5", b"x"])])
        if self.chance(0.2):
            opts.append([b"RETRYCOUNT", self.small()])
        if self.chance(0.25):
            opts.append([b"FORCE"])
        if self.chance(0.3):
            opts.append([b"JUSTID"])
        if self.chance(0.15):
            opts.append([b"LASTID", self.any_id()])
        self.rng.shuffle(opts)
        for o in opts:
            argv += o
        return argv

    def xautoclaim(self, client: int) -> list[Arg]:
        argv: list[Arg] = [b"XAUTOCLAIM", *self.key_group(), self.consumer(), self.idle(),
                           self.rng.choice([b"0", b"0-0", b"-", self.any_id(), self.range_bound(True)])]
        if self.chance(0.4):
            argv += [b"COUNT", self.rng.choice([b"1", b"2", b"3", b"100", b"0", b"-1", b"x"])]
        if self.chance(0.3):
            argv.append(b"JUSTID")
        return argv

    def xinfo(self, client: int) -> list[Arg]:
        sub = self.rng.choices([b"STREAM", b"GROUPS", b"CONSUMERS", b"HELP", b"stream", b"BOGUS"],
                               [6, 3, 3, 1, 1, 1])[0]
        if sub.upper() == b"STREAM":
            argv: list[Arg] = [b"XINFO", sub, self.key()]
            if self.chance(0.5):
                argv.append(b"FULL")
                if self.chance(0.4):
                    argv += [b"COUNT", self.rng.choice([b"0", b"1", b"2", b"-1", b"x"])]
            return argv
        if sub == b"GROUPS":
            return [b"XINFO", sub, self.key()]
        if sub == b"CONSUMERS":
            return [b"XINFO", sub, *self.key_group()]
        if sub == b"HELP":
            return [b"XINFO", sub]
        return [b"XINFO", sub, self.key()]

    def keyspace(self, client: int) -> list[Arg]:
        what = self.rng.choices([b"DEL", b"SET", b"TYPE", b"EXISTS", b"RENAME", b"FLUSHDB", b"UNLINK", b"SWAPDB",
                                 b"FLUSHALL", b"GET"], [3, 2, 2, 2, 3, 1, 1, 1, 1, 1])[0]
        key = self.key()
        if what == b"SET":
            key = key if self.chance(0.3) else _pick(self.rng, KEYS[1:])
            self.forget(key)
            return [b"SET", key, b"x"]
        if what == b"RENAME":
            target = self.key()
            if target != key:
                self.groups[target] = self.groups.pop(key, set())
            return [b"RENAME", key, target]
        if what in (b"FLUSHDB", b"FLUSHALL"):
            self.forget()
            return [what]
        if what == b"SWAPDB":
            self.forget()
            return [b"SWAPDB", b"0", b"1"]
        if what == b"EXISTS":
            return [b"EXISTS", *[self.key() for _ in range(self.rng.choice([1, 2]))]]
        if what in (b"DEL", b"UNLINK"):
            self.forget(key)
        return [what, key]

    def multi(self, client: int) -> list[Arg]:
        if client in self.in_multi:
            return list(self._end_multi(client).argv)
        if self.chance(0.1):
            return [self.rng.choice([b"EXEC", b"DISCARD"])]  # without MULTI: an error
        self.in_multi.add(client)
        return [b"MULTI"]

    def transaction(self, client: int) -> list[Step]:
        """MULTI, 2-6 writes (an XADD and the XDEL of its ID among them, sometimes), EXEC."""
        body: list[list[Arg]] = []
        for _ in range(self.rng.randrange(2, 7)):
            what = self.rng.choices(["xadd", "xdel", "xtrim", "xgroup", "xreadgroup", "keyspace", "xsetid", "xack"],
                                    [10, 3, 2, 2, 2, 2, 1, 1])[0]
            if what == "xdel" and self.issued:
                body.append([b"XDEL", self.key(), self.issued[-1]])
            else:
                body.append(FAMILIES[what](self, client))
        self.in_multi.discard(client)
        end = b"EXEC" if self.chance(0.9) else b"DISCARD"
        return [Step(client, (b"MULTI",)), *(Step(client, tuple(argv)) for argv in body), Step(client, (end,))]

    def burst(self, client: int) -> list[Step]:
        """Many entries at once, then a group read of all of them: PELs long enough for COUNT and
        XAUTOCLAIM's scan budget (COUNT * 10 entries examined) to matter. Some entries may then be
        deleted while still pending."""
        pairs = sorted((k, g) for k, gs in self.groups.items() for g in gs)
        key, group = self.rng.choice(pairs) if pairs else (KEYS[0], GROUPS[0])
        steps = [Step(client, (b"XADD", key, self.next_id(), b"f", b"v")) for _ in range(self.rng.randrange(8, 30))]
        added = self.issued[-len(steps):]
        steps.append(Step(client, (b"XREADGROUP", b"GROUP", group, self.consumer(), b"STREAMS", key, b">")))
        self.delivered()
        if self.chance(0.3):
            steps.append(Step(client, (b"XDEL", key, *self.rng.sample(added, 3))))
        return steps

    def contend(self, client: int) -> list[Step]:
        """Other clients block on one key (group readers of one group, or plain readers), then this
        client writes to it: the FIFO order of blocked clients decides who gets what."""
        others = [c for c in range(1, self.profile.clients + 1) if c != client]
        pairs = sorted((k, g) for k, gs in self.groups.items() for g in gs)
        key, group = self.rng.choice(pairs) if pairs else (KEYS[0], GROUPS[0])
        grouped = self.chance(0.7)
        steps: list[Step] = []
        for c in self.rng.sample(others, min(len(others), self.rng.choice([2, 2, 3]))):
            timeout = self.rng.choice([b"0", b"100000", b"5", b"20"])
            if grouped:
                count = [b"COUNT", b"1"] if self.chance(0.5) else []
                steps.append(Step(c, (b"XREADGROUP", b"GROUP", group, self.consumer(), *count, b"BLOCK", timeout,
                                      b"STREAMS", key, b">")))
            else:
                steps.append(Step(c, (b"XREAD", b"BLOCK", timeout, b"STREAMS", key, b"$")))
        if self.chance(0.2):
            steps.append(Step(client, (b"XGROUP", b"DESTROY", key, group)))
            self.groups.get(key, set()).discard(group)
        for _ in range(self.rng.choice([1, 1, 2])):
            steps.append(Step(client, (b"XADD", key, self.next_id(), b"f", b"v")))
        self.delivered()
        return steps

    def _end_multi(self, client: int) -> Step:
        self.in_multi.discard(client)
        return Step(client, (b"EXEC" if self.chance(0.8) else b"DISCARD",))

    def watch(self, client: int) -> list[Arg]:
        if self.chance(0.2):
            return [b"UNWATCH"]
        return [b"WATCH", *[self.key() for _ in range(self.rng.choice([1, 1, 2]))]]

    def connection(self, client: int) -> list[Arg]:
        return list(self.rng.choices([[b"HELLO", b"3"], [b"HELLO", b"2"], [b"SELECT", b"1"], [b"SELECT", b"0"],
                                 [b"PING"], [b"QUIT"], [b"RESET"], [b"HELLO"], [b"HELLO", b"4"],
                                 [b"HELLO", b"3", b"SETNAME", b"x"], [b"CLIENT", b"GETNAME"], [b"DBSIZE"],
                                 [b"KEYS", b"s*"], [b"KEYS", b"k*"], [b"SELECT", b"16"]],
                                [6, 1, 1, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])[0])

    def value_key(self) -> bytes:
        return _pick(self.rng, VALUE_KEYS)

    def strings(self, client: int) -> list[Arg]:
        """A string command with its options, valid mostly (spec/rules/strings.md)."""
        k, n = self.value_key(), _pick(self.rng, NUMBERS)
        expiry = self.rng.choice([[], [], [b"EX", b"100"], [b"PX", b"100000"], [b"KEEPTTL"], [b"PX", b"0"]])
        flags = self.rng.choice([[], [], [b"NX"], [b"XX"], [b"GET"], [b"NX", b"GET"]])
        return list(self.rng.choice([
            [b"SET", k, n, *flags, *expiry], [b"GET", k], [b"INCR", k], [b"DECRBY", k, n], [b"INCRBY", k, n],
            [b"INCRBYFLOAT", k, n], [b"APPEND", k, n], [b"STRLEN", k], [b"GETRANGE", k, n, b"-1"],
            [b"SETRANGE", k, self.rng.choice([b"0", b"2", b"-1"]), n], [b"MGET", k, self.value_key()],
            [b"MSET", k, n, self.value_key(), b"v"], [b"MSETNX", k, n], [b"GETDEL", k], [b"GETSET", k, n],
            [b"GETEX", k, *self.rng.choice([[], [b"PERSIST"], [b"EX", b"100"], [b"PXAT", b"1"], [b"EX", n]])],
            [b"SETNX", k, n], [b"SETEX", k, self.rng.choice([b"100", b"0", n]), b"v"]]))

    def hashes(self, client: int) -> list[Arg]:
        """A hash command on a small hash (listpack order), valid mostly (spec/rules/hashes.md)."""
        k, f, n = self.value_key(), self.rng.choice([b"f", b"g", b"h"]), _pick(self.rng, NUMBERS)
        return list(self.rng.choice([
            [b"HSET", k, f, n], [b"HSET", k, f, n, b"g", b"v"], [b"HMSET", k, f, n], [b"HSETNX", k, f, n],
            [b"HGET", k, f], [b"HMGET", k, f, b"g"], [b"HGETALL", k], [b"HDEL", k, f], [b"HDEL", k, f, b"g", b"h"],
            [b"HEXISTS", k, f], [b"HINCRBY", k, f, n], [b"HINCRBYFLOAT", k, f, n], [b"HKEYS", k], [b"HVALS", k],
            [b"HLEN", k], [b"HSTRLEN", k, f], [b"HSCAN", k, b"0", *self.rng.choice([[], [b"MATCH", b"f*"], [b"COUNT", n]])]]))

    def expiry(self, client: int) -> list[Arg]:
        """An expiry command with long times, so that nothing expires behind the model's back (expiry.md)."""
        k = self.rng.choice([self.value_key(), self.key()])
        opts = self.rng.choice([[], [], [b"NX"], [b"XX"], [b"GT"], [b"LT"], [b"NX", b"GT"], [b"BOGUS"]])
        return list(self.rng.choice([
            [b"EXPIRE", k, self.rng.choice([b"100", b"200", b"-1", b"x"]), *opts],
            [b"PEXPIRE", k, self.rng.choice([b"100000", b"200000"]), *opts],
            [b"EXPIREAT", k, self.rng.choice([b"1", b"99999999999"]), *opts], [b"TTL", k], [b"PTTL", k],
            [b"PERSIST", k], [b"EXPIRETIME", k], [b"PEXPIRETIME", k]]))

    def config(self, client: int) -> list[Arg]:
        if self.chance(0.2):
            return [b"CONFIG", b"GET", self.rng.choice([b"stream-node-max-entries", b"stream-node-max-bytes"])]
        if self.chance(0.3):
            return [b"CONFIG", b"SET", b"stream-node-max-bytes", self.rng.choice([b"0", b"50", b"200", b"4096"])]
        return [b"CONFIG", b"SET", b"stream-node-max-entries", self.rng.choice([b"1", b"2", b"3", b"100"])]


FAMILIES: dict[str, Callable[[Generator, int], list[Arg]]] = {
    "xadd": Generator.xadd, "xlen": Generator.xlen, "xrange": Generator.xrange, "xdel": Generator.xdel,
    "xtrim": Generator.xtrim, "xsetid": Generator.xsetid, "xgroup": Generator.xgroup,
    "xreadgroup": Generator.xreadgroup, "xread": Generator.xread, "xack": Generator.xack,
    "xpending": Generator.xpending, "xclaim": Generator.xclaim, "xautoclaim": Generator.xautoclaim,
    "xinfo": Generator.xinfo, "keyspace": Generator.keyspace, "multi": Generator.multi,
    "watch": Generator.watch, "connection": Generator.connection, "config": Generator.config,
    "strings": Generator.strings, "hashes": Generator.hashes, "expiry": Generator.expiry,
}


PROFILES: dict[str, Profile] = {
    "default": Profile(),
    # many clients blocking on streams and groups, and commands that serve, move or delete them
    "blocking": Profile(clients=4, weights=(("xread", 10), ("xreadgroup", 16), ("keyspace", 6), ("xinfo", 2),
                                            ("xsetid", 1), ("xrange", 2), ("xpending", 2))),
    # node layout: long and numeric payloads, approximate trimming, XINFO STREAM's node counts
    "layout": Profile(payloads=0.6, weights=(("xadd", 30), ("xtrim", 10), ("xinfo", 10), ("xdel", 6),
                                              ("xreadgroup", 4), ("xclaim", 2), ("xautoclaim", 2), ("multi", 1))),
    # pending entries: deliveries, claims, acknowledgements, idle times
    "groups": Profile(weights=(("xreadgroup", 20), ("xclaim", 14), ("xautoclaim", 10), ("xpending", 10),
                               ("xack", 8), ("xinfo", 8), ("keyspace", 2), ("xtrim", 2), ("multi", 2))),
    # entries-read, lag and the stream's counters
    "lag": Profile(weights=(("xsetid", 10), ("xgroup", 14), ("xdel", 8), ("xinfo", 12), ("xtrim", 6),
                            ("xclaim", 2), ("xautoclaim", 2), ("multi", 2))),
    # several databases: SELECT, SWAPDB and FLUSHALL against watches and blocked reads
    "databases": Profile(clients=4, weights=(("connection", 10), ("keyspace", 10), ("watch", 6), ("multi", 6),
                                             ("xread", 8), ("xreadgroup", 10), ("xinfo", 2), ("xclaim", 2))),
    # clients that send several commands before reading the replies, blocked reads among them
    "pipeline": Profile(pipeline=0.5, weights=(("xread", 8), ("xreadgroup", 14))),
    # IDs from the clock: ``*``, ``ms-*`` and explicit IDs just behind or ahead of it, pauses
    "clock": Profile(clock_mode=1.0, weights=(("xadd", 30), ("xrange", 10), ("pause", 5), ("xautoclaim", 8))),
    # few mistakes, so long valid histories build up
    "valid": Profile(invalid=0.02),
    # strings, hashes and key expiry beside the streams (long expiry times: active expiry is not modelled)
    "types": Profile(weights=(("strings", 14), ("hashes", 12), ("expiry", 8), ("keyspace", 4), ("multi", 3),
                              ("watch", 2))),
    # large streams and PELs: many entries, many deliveries, little deletion
    "bulk": Profile(clients=2, invalid=0.03, trim=0.03, weights=(("xadd", 40), ("xreadgroup", 14), ("xtrim", 1), ("xdel", 2),
                                                      ("keyspace", 0), ("xsetid", 1), ("xgroup", 3), ("config", 0),
                                                      ("connection", 1), ("multi", 1))),
}


def random_config(rng: random.Random) -> dict[str, str]:
    """Stream layout settings, small enough that node boundaries matter."""
    config = {"stream-node-max-entries": rng.choice(["1", "2", "3", "4", "100", "0"])}
    if rng.random() < 0.25:
        config["stream-node-max-bytes"] = rng.choice(["0", "1", "60", "100", "200", "1000"])
    return config


def resolve(argv: Sequence[Arg], now_ms: int) -> list[bytes]:
    """The command's bytes, with every :class:`RelativeTime` made absolute against ``now_ms``."""
    return [a if isinstance(a, bytes) else _num(now_ms + a.offset) + a.suffix for a in argv]


def describe(step: Step) -> str:
    """``c2> XADD s 1-0 f v`` with non-printable bytes escaped and empty arguments as ``""``."""
    if not step.argv:
        return f"(pause {step.pause} ms)"
    parts = ["|"] if step.pipelined else []
    for a in step.argv:
        if isinstance(a, RelativeTime):
            parts.append(f"<now{a.offset:+d}ms>{a.suffix.decode()}")
        elif a == b"":
            parts.append('""')
        else:
            text = a.decode("latin-1")
            printable = all(32 < ord(ch) < 127 for ch in text)
            parts.append(text if printable else repr(a)[1:])
    return f"c{step.client}> " + " ".join(parts)
