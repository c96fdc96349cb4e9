"""The compact transition system of a configuration: states as one integer, steps without the model.

A second implementation of the model's semantics, restricted to what a
:class:`~xspec.explore.config.Configuration` sends (one stream ``s``, one group
``g``, the consumers' reads, history reads, XACK, XCLAIM, XAUTOCLAIM, crashes,
the admin's XDEL and XADD, clock ticks), written for speed (spec/exploration.md,
EXPLORE-COMPACT-1 .. EXPLORE-COMPACT-5). A state is one ``int`` made of bit
fields:

======== ==================================================================
ld       the group's last-delivered-id (entry number; 0 is ``0-0``)
er       the group's entries-read, plus one (0 stands for -1, "invalid")
live     the live entries (bit ``e - 1`` for entry ``e-0``)
first    the stream's recorded-first-entry-id (entry number)
maxdel   the stream's max-deleted-entry-id (entry number)
added    entries-added (the last-generated-id is ``added-0``)
cons     which consumers exist in the group (bit ``c``)
err      1 while the server's errno is EAGAIN (a connection's accept leaves it), 0 once a walk ran off
         a tree (XADD-14; a configuration leaves no other value)
slot e   entry ``e``'s pending record: owner + 1 (0: not pending), age in
         ticks (capped at the horizon, EXPLORE-ABS-1), delivery count - 1
         (capped, EXPLORE-ABS-2)
======== ==================================================================

:meth:`CompactConfig.apply` is the semantics of one step (reply token, propagated
tokens, next state); :meth:`CompactConfig.expand` the same for every step of a
state, without replies, for the walk; :meth:`CompactConfig.alpha` the abstraction of
a model server. tests/test_explore_compact.py checks the three against the model
(the refinement test, EXPLORE-COMPACT-3).
"""

from __future__ import annotations

from collections.abc import Iterator
from errno import EAGAIN
from typing import Any

from xspec.explore.config import STREAM, Configuration, entry_id
from xspec.explore.engine import Step
from xspec.models.server import Server
from xspec.models.state import Stream
from xspec.spec.resp import Array, Bulk, Int, NullArray, Reply

GROUP = b"g"
FIELDS = (b"f", b"v")

# Reply tokens: what a step answered, as a small tuple the refinement test renders (:func:`render_reply`).
Token = tuple[Any, ...]


class _Slots(list[tuple[int, int, int] | None]):
    """A state's pending records while a step runs: which of them it wrote (the others keep their ages)."""

    def __init__(self, items: list[tuple[int, int, int] | None]) -> None:
        super().__init__(items)
        self.touched: set[int] = set()

    def __setitem__(self, i: Any, value: Any) -> None:
        self.touched.add(i)
        super().__setitem__(i, value)


class Unsupported(ValueError):
    """The configuration uses something the compact system does not implement: use ``--engine model``."""


def supported(config: Configuration) -> str | None:
    """Why the compact system cannot explore ``config``, or None when it can (EXPLORE-COMPACT-1)."""
    if config.groups != 1:
        return "several groups"
    if config.commands:
        return "command templates"
    if config.server_config:
        return "server configuration"
    if "add" in config.actions and "delete" in config.actions:
        # An XADD after the deletions that emptied a node makes a layout the compact state does not hold.
        return "both add and delete"
    if config.consumers > 9 or config.entries > 15:
        return "more than 9 consumers or 15 entries"
    return None


class CompactConfig:
    """The compact system of a configuration (see the module docstring)."""

    def __init__(self, config: Configuration, *, symmetry: bool = True) -> None:
        why = supported(config)
        if why is not None:
            raise Unsupported(f"configuration {config.name}: the compact engine does not support {why}; "
                              f"use --engine model")
        self.config = config
        self.symmetry = symmetry
        k = self.k = config.consumers
        n = self.n = config.entries
        self.horizon = max(config.min_idle_ticks, config.horizon_ticks)
        self.min_idle = config.min_idle_ticks
        self.cap = config.count_cap
        self.tick_ms = config.tick_ms
        self.names = tuple(b"c%d" % (i + 1) for i in range(k))
        self.admin = k
        self.process_names = tuple(x.decode() for x in self.names) + ("admin",)
        nb = max(n.bit_length(), 1)
        # Field offsets.
        self.LD = 0
        self.ER = self.LD + nb
        erb = (n + 1).bit_length()
        self.LIVE = self.ER + erb
        self.FIRST = self.LIVE + max(n, 1)
        self.MAXDEL = self.FIRST + nb
        self.ADDED = self.MAXDEL + nb
        self.CONS = self.ADDED + nb
        self.ERR = self.CONS + k  # 1 while errno is still EAGAIN from the last connection's accept (XADD-14)
        self.SLOTS = self.ERR + 1
        self.NB, self.ERB = nb, erb
        self.OB = (k + 1).bit_length()
        self.AB = max(self.horizon.bit_length(), 1)
        self.CB = max((self.cap - 1).bit_length(), 1)
        self.SW = self.OB + self.AB + self.CB
        self.bits = self.SLOTS + self.SW * n
        self.slot_at = [self.SLOTS + self.SW * e for e in range(n)]  # entry e + 1's slot
        self.slot_mask = [((1 << self.SW) - 1) << at for at in self.slot_at]
        actions = set(config.actions)
        self.consumer_actions = [a for a in ("read", "history", "ack", "claim", "autoclaim", "crash")
                                 if a in actions]
        self.admin_actions = [a for a in ("delete", "add") if a in actions]
        self.tick = "tick" in actions
        self.all_ids = config.arguments == "all"
        self._steps: dict[tuple[str, int, int], int] = {}
        self.steps: list[Step] = []
        self.step_kinds: list[tuple[str, int, int]] = []
        self.last_slots = _Slots([])
        self._masks()

    # -- encoding ----------------------------------------------------------------------------
    def encode(self, ld: int, er: int, live: int, first: int, maxdel: int, added: int, cons: int,
               slots: list[tuple[int, int, int] | None], err: int = 1) -> int:
        """The state with these fields; ``er`` is entries-read (-1: invalid); a slot is (owner, age, count) or None;
        ``err`` 1 while errno is EAGAIN."""
        s = (ld << self.LD) | ((er + 1) << self.ER) | (live << self.LIVE) | (first << self.FIRST) \
            | (maxdel << self.MAXDEL) | (added << self.ADDED) | (cons << self.CONS) | (err << self.ERR)
        for e, slot in enumerate(slots):
            if slot is not None:
                s |= self.slot_value(*slot) << self.slot_at[e]
        return s

    def slot_value(self, owner: int, age: int, count: int) -> int:
        return (owner + 1) | (age << self.OB) | ((min(count, self.cap) - 1) << (self.OB + self.AB))

    def decode(self, s: int) -> tuple[int, int, int, int, int, int, int, list[tuple[int, int, int] | None]]:
        """The fields of ``s``: (ld, entries-read, live, first, maxdel, added, cons, slots)."""
        nm = (1 << self.NB) - 1
        slots: list[tuple[int, int, int] | None] = []
        om, am, cm = (1 << self.OB) - 1, (1 << self.AB) - 1, (1 << self.CB) - 1
        for at in self.slot_at:
            v = (s >> at) & ((1 << self.SW) - 1)
            slots.append(None if not v & om else
                         ((v & om) - 1, (v >> self.OB) & am, ((v >> (self.OB + self.AB)) & cm) + 1))
        return ((s >> self.LD) & nm, ((s >> self.ER) & ((1 << self.ERB) - 1)) - 1,
                (s >> self.LIVE) & ((1 << max(self.n, 1)) - 1), (s >> self.FIRST) & nm, (s >> self.MAXDEL) & nm,
                (s >> self.ADDED) & nm, (s >> self.CONS) & ((1 << self.k) - 1), slots)

    # -- the abstraction of a model server (EXPLORE-COMPACT-2) -------------------------------
    def alpha(self, server: Server) -> int:
        """The compact state a model server is in: its clock's ``now`` against each delivery time gives the ages."""
        stream = server.dbs[0][STREAM]
        assert isinstance(stream, Stream)
        group = stream.groups[GROUP]
        now = server.clock.now_ms()
        live = 0
        for i in stream.entries:
            live |= 1 << (i.ms - 1)
        cons = 0
        for name in group.consumers:
            cons |= 1 << self.names.index(name)
        slots: list[tuple[int, int, int] | None] = [None] * self.n
        for i, nack in group.pel.items():
            age = min(int(now - nack.delivery_time), self.horizon * self.tick_ms) // self.tick_ms
            slots[i.ms - 1] = (self.names.index(nack.consumer.name), age, min(nack.delivery_count, self.cap))
        if server.errno not in (0, EAGAIN):
            raise Unsupported(f"errno {server.errno}: a configuration leaves only 0 or EAGAIN")
        return self.encode(group.last_id.ms, group.entries_read, live, stream.first_id.ms, stream.max_deleted_id.ms,
                           stream.entries_added, cons, slots, int(server.errno == EAGAIN))

    def setup(self) -> list[tuple[int, tuple[bytes, ...]]]:
        cmds: list[tuple[int, tuple[bytes, ...]]] = [(self.admin, (b"XGROUP", b"CREATE", STREAM, GROUP, b"0",
                                                                   b"MKSTREAM"))]
        if self.config.prefill:
            cmds.extend((self.admin, (b"XADD", STREAM, entry_id(i + 1), *FIELDS)) for i in range(self.n))
        return cmds

    def initial(self) -> int:
        # XGROUP CREATE ... 0 leaves entries-read unknown (-1); the last connection's accept left EAGAIN,
        # and the first XADD's seek in the empty tree sets errno to 0.
        if self.config.prefill:
            n = self.n
            return self.encode(0, -1, (1 << n) - 1, 1 if n else 0, 0, n, 0, [None] * n, 0 if n else 1)
        return self.encode(0, -1, 0, 0, 0, 0, 0, [None] * self.n, 1)

    # -- steps ---------------------------------------------------------------------------------
    def step_id(self, kind: str, proc: int, e: int) -> int:
        """The number of a step: ``kind`` by process ``proc`` naming entry ``e`` (0: none)."""
        found = self._steps.get((kind, proc, e))
        if found is None:
            found = self._steps[(kind, proc, e)] = len(self.steps)
            self.steps.append(self._make_step(kind, proc, e))
            self.step_kinds.append((kind, proc, e))
        return found

    def _make_step(self, kind: str, proc: int, e: int) -> Step:
        idle = b"%d" % (self.min_idle * self.tick_ms)
        if kind == "tick":
            return Step(-1, "tick", text=f"+{self.tick_ms} ms")
        if kind == "crash":
            return Step(proc, "crash", text="crashes and restarts (new connection)")
        if kind in ("delete", "add"):
            admin: tuple[bytes, ...] = (b"XDEL", STREAM, entry_id(e)) if kind == "delete" else \
                (b"XADD", STREAM, entry_id(e), *FIELDS)
            return Step(proc, "command", admin)
        name = self.names[proc]
        argv: tuple[bytes, ...] = {
            "read": (b"XREADGROUP", b"GROUP", GROUP, name, b"COUNT", b"1", b"STREAMS", STREAM, b">"),
            "history": (b"XREADGROUP", b"GROUP", GROUP, name, b"COUNT", b"1", b"STREAMS", STREAM, b"0"),
            "ack": (b"XACK", STREAM, GROUP, entry_id(e)),
            "claim": (b"XCLAIM", STREAM, GROUP, name, idle, entry_id(e)),
            "autoclaim": (b"XAUTOCLAIM", STREAM, GROUP, name, idle, b"0-0", b"COUNT", b"1"),
        }[kind]
        return Step(proc, "command", argv)

    def plan(self, s: int, skip: tuple[bool, ...] | None = None) -> list[int]:
        """The steps of state ``s`` in the model's plan order (config.py's ``_new_plan``), ``skip``ped processes left out."""
        _, _, live, _, _, added, _, slots = self.decode(s)
        out: list[int] = []
        sid = self.step_id
        every = range(1, self.n + 1)
        for proc in range(self.k):
            if skip is not None and skip[proc]:
                continue
            for action in self.consumer_actions:
                if action == "ack":
                    ids = every if self.all_ids else [e for e in every if (x := slots[e - 1]) and x[0] == proc]
                    out.extend(sid("ack", proc, e) for e in ids)
                elif action == "claim":
                    ids = every if self.all_ids else [e for e in every if (x := slots[e - 1]) and x[0] != proc]
                    out.extend(sid("claim", proc, e) for e in ids)
                else:
                    out.append(sid(action, proc, 0))
        for admin_action in self.admin_actions:
            if admin_action == "delete":
                ids = every if self.all_ids else [e for e in every if live >> (e - 1) & 1]
                out.extend(sid("delete", self.admin, e) for e in ids)
            elif added < self.n:
                out.append(sid("add", self.admin, added + 1))
        if self.tick:
            out.append(sid("tick", -1, 0))
        return out

    # -- the semantics of one step (EXPLORE-COMPACT-1) ------------------------------------------
    def apply(self, s: int, step: int) -> tuple[Token | None, list[Token], int]:
        """Step number ``step`` from state ``s``: (reply token, propagated tokens, next state).

        The reply token is None for a crash or a tick. Times in propagated tokens are ages in ticks
        (capped), delivery counts are capped.
        """
        kind, proc, e = self.step_kinds[step]
        ld, er, live, first, maxdel, added, cons, decoded = self.decode(s)
        slots = self.last_slots = _Slots(decoded)
        err = (s >> self.ERR) & 1
        prop: list[Token] = []
        reply: Token | None = None
        H, cap = self.horizon, self.cap
        length = bin(live).count("1")

        def lookup(i: int) -> bool:
            """``lookup_entry`` of entry ``i``: whether it is live; a miss with nothing live after it
            runs off the tree (errno 0)."""
            nonlocal err
            if live >> (i - 1) & 1:
                return True
            if not live >> i:
                err = 0
            return False

        if kind == "tick":
            for i, x in enumerate(decoded):
                if x is not None:
                    slots[i] = (x[0], min(x[1] + 1, H), x[2])
        elif kind == "crash":
            err = 1  # the new connection's accept leaves EAGAIN (XADD-14)
        elif kind == "delete":
            if not live >> (e - 1) & 1:
                lookup(e)
                reply = ("int", 0)
            else:
                live &= ~(1 << (e - 1))
                maxdel = max(maxdel, e)
                if not live:
                    first = 0
                elif e == first:
                    first = (live & -live).bit_length()
                prop.append(("verbatim",))
                reply = ("int", 1)
        elif kind == "add":
            if added == 0:
                err = 0  # the seek for the tail node finds an empty tree
            live |= 1 << (e - 1)
            added += 1
            if length + 1 == 1:
                first = e
            prop.append(("verbatim",))
            reply = ("bulk", e)
        elif kind == "ack":
            if slots[e - 1] is None:
                reply = ("int", 0)
            else:
                slots[e - 1] = None
                prop.append(("verbatim",))
                reply = ("int", 1)
        elif kind == "read":
            newer = live >> ld  # live entries above the last-delivered-id
            if not newer:
                reply = ("nullarray",)  # XREADGROUP-7: nothing new, no consumer created
            else:
                cons |= 1 << proc
                nxt = ld + (newer & -newer).bit_length()
                # LAG-4 (7.0): tombstones are looked for from the entry delivered onwards
                tomb = maxdel != 0 and length != 0 and first <= maxdel and nxt <= maxdel
                if er != -1 and not tomb:
                    er += 1
                else:
                    er = self._estimate(nxt, live, first, maxdel, added, length)
                ld = nxt
                slots[nxt - 1] = (proc, 0, 1)
                prop.append(("claim", proc, nxt, 0, 1, ld))
                reply = ("read", nxt)
        elif kind == "history":
            cons |= 1 << proc
            own = [i for i, x in enumerate(slots) if x is not None and x[0] == proc]
            reply = ("history", 0, False)
            if own:
                i = own[0]
                x = slots[i]
                assert x is not None
                if lookup(i + 1):
                    slots[i] = (proc, 0, min(x[2] + 1, cap))
                    reply = ("history", i + 1, True)
                else:
                    reply = ("history", i + 1, False)
            if len(own) < 2:
                err = 0  # the PEL walk ends off the tree unless an entry remained past the COUNT-th
        elif kind == "claim":
            x = slots[e - 1]
            reply = ("array", ())
            if not lookup(e):
                if x is not None:
                    prop.append(("claim", x[0], e, x[1], x[2], ld))  # XCLAIM-9: the deletion from the PEL
                    slots[e - 1] = None
            elif x is not None and not (self.min_idle and x[1] < self.min_idle):
                cons |= 1 << proc
                slots[e - 1] = (proc, 0, min(x[2] + 1, cap))
                prop.append(("claim", proc, e, 0, min(x[2] + 1, cap), ld))
                reply = ("array", (e,))
        elif kind == "autoclaim":
            attempts, count = 10, 1
            claimed: tuple[int, ...] = ()
            deleted: tuple[int, ...] = ()
            position: int | None = 1
            while attempts and count and position is not None:
                at = next((i for i in range(position - 1, self.n) if slots[i] is not None), None)
                if at is None:
                    position = None
                    break
                x = slots[at]
                assert x is not None
                attempts -= 1
                position = at + 2
                if not lookup(at + 1):
                    prop.append(("claim", x[0], at + 1, x[1], x[2], ld))
                    slots[at] = None
                    deleted += (at + 1,)
                    count -= 1
                    continue
                if self.min_idle and x[1] < self.min_idle:
                    continue
                cons |= 1 << proc
                slots[at] = (proc, 0, min(x[2] + 1, cap))
                claimed += (at + 1,)
                count -= 1
                prop.append(("claim", proc, at + 1, 0, min(x[2] + 1, cap), ld))
            cursor = 0
            if position is not None:
                cursor = next((i + 1 for i in range(position - 1, self.n) if slots[i] is not None), 0)
            if not cursor:
                err = 0  # the step to the next cursor ran off the tree
            reply = ("autoclaim", cursor, claimed, deleted)
        else:
            raise AssertionError(kind)
        return reply, prop, self.encode(ld, er, live, first, maxdel, added, cons, slots, err)

    def _estimate(self, e: int, live: int, first: int, maxdel: int, added: int, length: int) -> int:
        """LAG-2 (7.0): the entries-read of a group whose last-delivered-id is entry ``e``."""
        if added == 0:
            return 0
        if length == 0 and e <= added:
            return added
        if e == added:
            return added
        if e > added:
            return -1
        if maxdel == 0 or maxdel < first:
            if e < first:
                return added - length
            if e == first:
                return added - length + 1
        return -1

    # -- symmetry (EXPLORE-COMPACT-4) ----------------------------------------------------------------
    def signatures(self, s: int) -> list[int]:
        """Per consumer, a number that says everything about it without its label: membership, and the
        pending entries it owns with their ages and counts."""
        sigs = [((s >> (self.CONS + c)) & 1) << self.bits for c in range(self.k)]
        om = (1 << self.OB) - 1
        sw = (1 << self.SW) - 1
        for e, at in enumerate(self.slot_at):
            v = (s >> at) & sw
            if v & om:
                sigs[(v & om) - 1] |= ((v >> self.OB) + 1) << (e * self.SW)
        return sigs

    def canonical(self, s: int) -> tuple[int, tuple[int, ...] | None]:
        """The representative of ``s``'s orbit (consumers ordered by signature) and the permutation applied
        (``perm[old] = new``), None for the identity."""
        if not self.symmetry or self.k < 2:
            return s, None
        sigs = self.signatures(s)
        order = sorted(range(self.k), key=sigs.__getitem__)
        if all(o == i for i, o in enumerate(order)):
            return s, None
        perm = [0] * (self.k + 1)
        for new, old in enumerate(order):
            perm[old] = new
        perm[self.k] = self.k
        return self.relabel(s, tuple(perm)), tuple(perm)

    def relabel(self, s: int, perm: tuple[int, ...]) -> int:
        """``s`` with consumer ``c`` renamed ``perm[c]``: memberships and owners follow."""
        cons = (s >> self.CONS) & ((1 << self.k) - 1)
        out = s & ~(((1 << self.k) - 1) << self.CONS)
        for c in range(self.k):
            if cons >> c & 1:
                out |= 1 << (self.CONS + perm[c])
        om = (1 << self.OB) - 1
        for at in self.slot_at:
            o = (s >> at) & om
            if o:
                out = (out & ~(om << at)) | ((perm[o - 1] + 1) << at)
        return out

    def ties(self, s: int) -> tuple[bool, ...]:
        """For a canonical state: True for each consumer whose signature equals the previous one's (EXPLORE-SYM-3)."""
        if not self.symmetry or self.k < 2:
            return (False,) * (self.k + 1)
        sigs = self.signatures(s)
        return (False,) + tuple(sigs[c] == sigs[c - 1] for c in range(1, self.k)) + (False,)

    def orbit(self, s: int) -> set[int]:
        """Every relabelling of ``s`` (brute force, for tests and for counting orbits)."""
        from itertools import permutations
        return {self.relabel(s, tuple(p) + (self.k,)) for p in permutations(range(self.k))}

    def successors(self, s: int, skip: tuple[bool, ...]) -> list[tuple[int, int]]:
        """Each step of ``s`` (``skip``ped processes left out) with its raw successor, by :meth:`apply`."""
        return _successors_by_apply(self, s, skip)

    # -- the fast path (EXPLORE-COMPACT-2) ----------------------------------------------------------
    def _masks(self) -> None:
        om = (1 << self.OB) - 1
        am = ((1 << self.AB) - 1) << self.OB
        nb = (1 << self.NB) - 1
        self.full = (1 << self.bits) - 1
        self.owner_mask = sum(om << at for at in self.slot_at)
        self.age_mask = sum(am << at for at in self.slot_at)
        cons = ((1 << self.k) - 1) << self.CONS
        all_slots = sum(self.slot_mask)
        self.sig_mask = cons | all_slots
        self.co_mask = cons | self.owner_mask
        live = ((1 << max(self.n, 1)) - 1) << self.LIVE
        added = nb << self.ADDED
        first, maxdel = nb << self.FIRST, nb << self.MAXDEL
        errb = 1 << self.ERR
        globals_ = (1 << self.CONS) - 1  # ld, entries-read, live, first, maxdel, added
        self.plan_mask = self.owner_mask | live | added
        # What each kind of step reads: its successor is a function of these bits (and it writes no others
        # but the pending records it rewrites whole); tests/test_explore_compact.py compares with apply.
        # Claims read ages only through "idle enough to claim" (the claimable entries: :meth:`_slot_facts`), and
        # history reads no age; ack and crash write what they write whatever the state.
        timeless = all_slots & ~self.age_mask
        self._reads: dict[str, Any] = {
            "read": lambda c, e: globals_ | (1 << (self.CONS + c)),
            "history": lambda c, e: live | timeless | (1 << (self.CONS + c)) | errb,
            "ack": lambda c, e: 0,
            "claim": lambda c, e: live | (self.slot_mask[e - 1] & timeless) | (1 << (self.CONS + c)) | errb,
            "autoclaim": lambda c, e: live | timeless | (1 << (self.CONS + c)) | errb,
            "delete": lambda c, e: live | first | maxdel | errb,
            "add": lambda c, e: live | added | first | errb,
            "crash": lambda c, e: 0,
        }
        self._writes: dict[str, Any] = {"ack": lambda c, e: self.slot_mask[e - 1], "crash": lambda c, e: errb}
        self.live_bits = (1 << max(self.n, 1)) - 1
        self.count_bits = (1 << self.CB) - 1
        self.err_bit = errb
        self._pending: dict[int, int] = {}
        self._by_slots: dict[int, tuple[int, int, int]] = {}
        self._plans: dict[int, list[tuple[int, int, dict[int, tuple[int, int]] | None, int]]] = {}
        self._learned: dict[int, dict[int, tuple[int, int]]] = {}
        self._canon: dict[int, tuple[int, tuple[int, ...] | None]] = {}
        self._tick = self.step_id("tick", -1, 0) if self.tick else -1

    def expand(self, s: int) -> list[tuple[int, int]]:
        """:meth:`successors` of ``s`` with its ties skipped (EXPLORE-SYM-3), from what each step read: a
        step's successor is ``(s & keep) | bits`` for the ``keep`` and ``bits`` learned (by :meth:`apply`) the
        first time the step ran on a state with the same bits where it reads."""
        found = self._by_slots.get(s & self.sig_mask)
        if found is None:
            found = self._by_slots[s & self.sig_mask] = self._slot_facts(s)
        tick, tied, idle = found
        plan_key = (s & self.plan_mask) | (tied << self.bits)
        plan = self._plans.get(plan_key)
        if plan is None:
            plan = self._plans[plan_key] = self._make_plan(s)
        out: list[tuple[int, int]] = []
        append = out.append
        for sid, reads, learned, idle_of in plan:
            if learned is None:  # XAUTOCLAIM ... COUNT 1, computed directly
                append((sid, self._autoclaim(s, reads, idle)))
                continue
            at = (s & reads) | (idle & idle_of)
            done = learned.get(at)
            if done is None:
                done = learned[at] = self._learn(s, sid, reads)
            append((sid, (s & done[0]) | done[1]))
        if tick >= 0:
            append((self._tick, s + tick))
        return out

    def _slot_facts(self, s: int) -> tuple[int, int, int]:
        """What the pending records and memberships of ``s`` decide: the tick's addition to the ages (-1: no
        tick), the tied consumers as bits, and the entries idle enough to claim (bits above the state's)."""
        tick = 0
        idle = 0
        for e, x in enumerate(self.decode(s)[7]):
            if x is not None and x[1] < self.horizon:
                tick += 1 << (self.slot_at[e] + self.OB)
            if x is not None and not (self.min_idle and x[1] < self.min_idle):
                idle |= 1 << (self.bits + e)
        tied = sum(1 << c for c, t in enumerate(self.ties(s)) if t)
        return (tick if self.tick else -1), tied, idle

    def _make_plan(self, s: int) -> list[tuple[int, int, dict[int, tuple[int, int]] | None, int]]:
        out: list[tuple[int, int, dict[int, tuple[int, int]] | None, int]] = []
        for sid in self.plan(s, self.ties(s)):
            if sid == self._tick:
                continue
            kind, proc, e = self.step_kinds[sid]
            if kind == "autoclaim" and self.n <= 10:  # at most 10 attempts: the walk reaches every pending entry
                out.append((sid, proc, None, 0))
                continue
            learned = self._learned.get(sid)
            if learned is None:
                learned = self._learned[sid] = {}
            idle_of = 0
            if kind == "claim":
                idle_of = 1 << (self.bits + e - 1)
            elif kind == "autoclaim":
                idle_of = ((1 << self.n) - 1) << self.bits
            out.append((sid, self._reads[kind](proc, e), learned, idle_of))
        return out

    def _autoclaim(self, s: int, c: int, idle: int) -> int:
        """``XAUTOCLAIM s g c <min-idle> 0-0 COUNT 1`` from ``s`` (the same as :meth:`apply`, tested): the first
        pending entry that is deleted (dropped from the PEL) or idle enough (claimed by ``c``) is the one the
        walk stops at; the walk runs off the tree (errno 0) when it finds none or no pending entry follows,
        and a deleted entry's lookup does when no live entry follows it."""
        live = (s >> self.LIVE) & self.live_bits
        pending = self._pending_of(s)
        candidates = pending & (~live | (idle >> self.bits))
        if not candidates:
            return s & ~self.err_bit
        low = candidates & -candidates
        e = low.bit_length() - 1
        at = self.slot_at[e]
        if not live & low:
            new = s & ~self.slot_mask[e]
            errno_zero = not live >> (e + 1)
        else:
            counted = min(((s >> (at + self.OB + self.AB)) & self.count_bits) + 1, self.cap - 1)
            new = (s & ~self.slot_mask[e]) | (((c + 1) | (counted << (self.OB + self.AB))) << at) \
                | (1 << (self.CONS + c))
            errno_zero = False
        if errno_zero or not pending >> (e + 1):
            new &= ~self.err_bit
        return new

    def _pending_of(self, s: int) -> int:
        """The pending entries of ``s`` as bits (entry ``e`` at bit ``e - 1``)."""
        found = self._pending.get(s & self.owner_mask)
        if found is None:
            om = (1 << self.OB) - 1
            found = self._pending[s & self.owner_mask] = sum(1 << e for e, at in enumerate(self.slot_at)
                                                              if (s >> at) & om)
        return found

    def _learn(self, s: int, sid: int, reads: int) -> tuple[int, int]:
        _, _, nxt = self.apply(s, sid)
        kind, proc, e = self.step_kinds[sid]
        always = self._writes.get(kind)
        written = reads | sum(self.slot_mask[i] for i in self.last_slots.touched) | (always(proc, e) if always else 0)
        keep = self.full & ~written
        assert (s & keep) | (nxt & written) == nxt
        return keep, nxt & written

    def canonical_fast(self, s: int) -> tuple[int, tuple[int, ...] | None]:
        """:meth:`canonical`, remembered by memberships and pending records (all that relabelling reads or moves)."""
        part = s & self.sig_mask
        found = self._canon.get(part)
        if found is None:
            c, perm = self.canonical(s)
            found = self._canon[part] = (c & self.co_mask, perm)
        co, perm = found
        if perm is None:
            return s, None
        return (s & ~self.co_mask) | co, perm

    def safety(self, s: int) -> Iterator[tuple[str, str]]:
        return iter(())

    # -- invariants of the compact state (EXPLORE-COMPACT-5) ---------------------------------------------
    def violations(self, s: int) -> Iterator[str]:
        ld, er, live, first, maxdel, added, cons, slots = self.decode(s)
        for e, x in enumerate(slots, 1):
            if x is not None and e > ld:
                yield f"pending entry {e}-0 above the last-delivered-id {ld}-0"
            if x is not None and not cons >> x[0] & 1:
                yield f"pending entry {e}-0 owned by a consumer that does not exist"
        if er > added:
            yield "entries-read above entries-added"
        if live >> added:
            yield "a live entry above the last-generated-id"


def render_reply(system: CompactConfig, token: Token) -> Reply:
    """The model's reply (RESP2) for a reply token of :meth:`CompactConfig.apply`."""
    def entry(e: int) -> Reply:
        return Array((Bulk(entry_id(e)), Array(tuple(map(Bulk, FIELDS)))))

    kind = token[0]
    if kind == "int":
        return Int(token[1])
    if kind == "bulk":
        return Bulk(entry_id(token[1]))
    if kind == "nullarray":
        return NullArray()
    if kind == "read":
        return Array((Array((Bulk(STREAM), Array((entry(token[1]),)))),))
    if kind == "history":
        _, e, present = token
        items: tuple[Reply, ...] = ()
        if e:
            items = (entry(e),) if present else (Array((Bulk(entry_id(e)), NullArray())),)
        return Array((Array((Bulk(STREAM), Array(items))),))
    if kind == "array":
        return Array(tuple(entry(e) for e in token[1]))
    if kind == "autoclaim":
        _, cursor, claimed, deleted = token
        return Array((Bulk(entry_id(cursor)), Array(tuple(entry(e) for e in claimed)),
                      Array(tuple(Bulk(entry_id(e)) for e in deleted))))
    raise AssertionError(kind)


def abstract_propagation(system: CompactConfig, argv: list[bytes | int], now_ms: int, step: Step) -> Token:
    """A command the model propagated, as a token of :meth:`CompactConfig.apply`: XCLAIM's TIME as an age in
    ticks (capped) and its RETRYCOUNT capped; others ``("verbatim",)``
    when they are the step's own command."""
    words = [w if isinstance(w, int) else w for w in argv]
    if words[0] == b"XCLAIM":
        owner = system.names.index(words[3])  # type: ignore[arg-type]
        e = int(bytes(words[5]).split(b"-")[0])  # type: ignore[arg-type]
        time = int(words[7])
        age = min(now_ms - time, system.horizon * system.tick_ms) // system.tick_ms
        last = int(bytes(words[13]).split(b"-")[0])  # type: ignore[arg-type]
        return ("claim", owner, e, age, min(int(words[9]), system.cap), last)
    if [bytes(w) if not isinstance(w, int) else w for w in words] == list(step.argv):
        return ("verbatim",)
    return ("other", tuple(words))


def _successors_by_apply(system: CompactConfig, s: int, skip: tuple[bool, ...]) -> list[tuple[int, int]]:
    """Every step's successor through :meth:`CompactConfig.apply` (the reference for :meth:`CompactConfig.successors`)."""
    return [(step, system.apply(s, step)[2]) for step in system.plan(s, skip)]
