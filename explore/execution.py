"""Running one step of a process on the real model, from an abstract key.

:class:`Executor` materialises the key (:meth:`Abstraction.thaw`), lets the
model's dispatcher run the command (``Server.execute``: command lookup,
arity, MULTI queuing, the handler, blocked clients), and reads the new key.
These shortcuts keep it cheap without changing what runs:

* the last materialised server is reused while a step leaves its key
  unchanged (a read that finds nothing, an XACK of an entry nobody holds),
  instead of being rebuilt for the next step from the same state;
* with ``memo`` on (the default), the reply and successor of
  ``(key, process, argv)`` are remembered under the key's shape (the key
  without the pending entries' ages), together with the ages the model
  actually read (:class:`TracedNack` records them): the step does the same in
  every state that differs only in the ages it did not read, and the ages it
  leaves are either ones it found or ones it wrote (EXPLORE-MEMO-1,
  EXPLORE-MEMO-2). States that differ only in process programs or ghosts share
  the server's transitions too;
* a step that left a stream's header or groups untouched (:class:`TracedStream`
  marks what each step touches) is also remembered under the parts it touched,
  and answers for every state that differs only in the others (EXPLORE-MEMO-4):
  a crash, an XDEL or an XACK runs a handful of times, not once per shape;
* a plan holds the memo's record of each of its steps in its shape (:meth:`Executor.slot`), and
  :meth:`Executor.outcomes` answers a whole plan from a state, looking each step up there first
  (EXPLORE-MEMO-5).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from xspec.explore.abstraction import BASE_MS, Abstraction, Key, TimeReads, TracedStream
from xspec.models.clock import ManualClock
from xspec.models.invariants import violations as invariant_violations
from xspec.models.server import Server
from xspec.spec.resp import Reply

CRASH = (b"<crash>",)
"""The memo's name for a crash-and-restart, which sends no command."""

Outcome = tuple[Reply | None, int, tuple[tuple[int, int], ...] | None]
"""What a step did: (reply, successor's shape, where its ages come from: None when the step changes
nothing, :data:`SAME_AGES` when they are the ages it started from)."""
SAME_AGES: tuple[tuple[int, int], ...] = ((-1, -1),)
"""The template of a step whose successor has the ages of the state it started from, unchanged."""
ByAges = list[tuple[tuple[int, ...], Callable[[tuple[int, ...]], Any] | None, dict[Any, Any]]]
"""Steps remembered per set of ages read: (positions read, what picks them out of a key's ages (None
for none), the ages picked -> what the step did)."""
Memo = dict[int, dict[tuple[int, tuple[bytes, ...]], ByAges]]
"""Shape (key without ages) -> (process, argv) -> what running it did, per combination of ages it read."""


def _recall(by_ages: ByAges, ages: tuple[int, ...]) -> Any:
    """What a step remembered in ``by_ages`` did in a state with ``ages``, or None (EXPLORE-MEMO-1)."""
    for _, pick, done in by_ages:
        found = done.get(None if pick is None else pick(ages))
        if found is not None:
            return found
    return None


def _note(by_ages: ByAges, read: tuple[int, ...], ages: tuple[int, ...], what: Any) -> None:
    """Remember ``what`` a step did that read the ages at positions ``read`` of ``ages``."""
    for group in by_ages:
        if group[0] == read:
            break
    else:
        group = (read, itemgetter(*read) if read else None, {})
        by_ages.append(group)
    _, pick, done = group
    done[None if pick is None else pick(ages)] = what


class Executor:
    def __init__(self, abstraction: Abstraction, *, memo: bool = True) -> None:
        self.abstraction = abstraction
        self.memo: Memo | None = {} if memo else None
        self._live_key: Key | None = None
        self._live: Server | None = None
        self._verdicts: dict[int, list[str]] = {}
        # (process, argv, base) -> parts touched -> those parts' values -> steps (EXPLORE-MEMO-4)
        self._partial_memo: dict[tuple[int, tuple[bytes, ...], int], dict[Any, dict[int, ByAges]]] = {}
        self._projections: dict[tuple[int, tuple[tuple[bool, bool], ...]], int] = {}
        self.executed = 0

    def slot(self, shape: int, proc: int, argv: tuple[bytes, ...]) -> ByAges | None:
        """The memo's record of process ``proc`` sending ``argv`` (:data:`CRASH`: crashing) in states of
        ``shape``, created empty: a plan holds it, so that :meth:`outcomes` finds it without looking it up.
        None when the memo is off."""
        if self.memo is None:
            return None
        table = self.memo.get(shape)
        if table is None:
            table = self.memo[shape] = {}
        found = table.get((proc, argv))
        if found is None:
            found = table[(proc, argv)] = []
        return found

    def outcomes(self, key: Key, plan: list[tuple[int, tuple[bytes, ...], ByAges | None]]
                 ) -> list[tuple[Reply | None, Key, Server | None]]:
        """What :meth:`command` (or :meth:`crash`, for :data:`CRASH`) returns for each (process, argv, memo
        slot) of ``plan`` from ``key``, without their layers for the steps the memo answers (EXPLORE-MEMO-1,
        EXPLORE-MEMO-5). A step that changes nothing returns ``key`` itself."""
        ages = key[1]
        out: list[tuple[Reply | None, Key, Server | None]] = []
        append = out.append
        for proc, argv, by_ages in plan:
            if by_ages:
                for _, pick, done in by_ages:
                    found = done.get(None if pick is None else pick(ages))
                    if found is not None:
                        reply, shape, template = found
                        if template is None:
                            append((reply, key, None))
                        elif template is SAME_AGES:
                            append((reply, (shape, ages), None))
                        else:
                            append((reply, (shape, tuple([ages[i] if i >= 0 else a for i, a in template])), None))
                        break
                else:
                    append(self._step(key, proc, argv, _CRASH_ACT if argv is CRASH else _command_act(proc, argv),
                                      recalled=True))
            else:
                append(self._step(key, proc, argv, _CRASH_ACT if argv is CRASH else _command_act(proc, argv),
                                  recalled=True))
        return out

    def command(self, key: Key, proc: int, argv: tuple[bytes, ...]) -> tuple[Reply | None, Key, Server | None]:
        """Process ``proc`` (client ``proc + 1``) sends ``argv`` in state ``key``: reply, new key, live server.

        The server is None when the transition came from the memo.
        """
        return self._step(key, proc, argv, _command_act(proc, argv))

    def crash(self, key: Key, proc: int) -> tuple[Key, Server | None]:
        """Process ``proc`` dies and restarts: its connection closes and a new one opens (EXPLORE-CRASH-1)."""
        _, new, server = self._step(key, proc, CRASH, _CRASH_ACT)
        return new, server

    def violations(self, key: Key, live: Server | None) -> list[str]:
        """The invariant violations (models/invariants.py) of the state ``key``; ``live`` is a server in it, if any.

        Verdicts are remembered per key without ages when checking them read no
        delivery time (the invariants are about structure), so states that differ
        only in ages, or only in program states and ghosts, are checked once
        (EXPLORE-2, EXPLORE-MEMO-3).
        """
        verdict = self._verdicts.get(key[0])
        if verdict is None:
            server = live if live is not None else self.abstraction.thaw(key)
            read_log: list[int] = []
            TimeReads.origins = read_log
            verdict = invariant_violations(server)
            TimeReads.origins = []
            if not read_log:
                self._verdicts[key[0]] = verdict
        return verdict

    def _step(self, key: Key, proc: int, argv: tuple[bytes, ...], act: Callable[[Server, int], Reply | None],
              recalled: bool = False) -> tuple[Reply | None, Key, Server | None]:
        """Run (or recall) one step; ``recalled``: the caller already found the shape's memo silent."""
        shape, ages = key
        table = None
        if self.memo is not None:
            table = self.memo.get(shape)
            if table is None:
                table = self.memo[shape] = {}
            by_ages = None if recalled else table.get((proc, argv))
            if by_ages:
                done = _recall(by_ages, ages)
                if done is not None:
                    reply, out, template = done
                    if template is None:  # the step leaves the state as it found it
                        return reply, key, None
                    if template is SAME_AGES:
                        return reply, (out, ages), None
                    return reply, (out, tuple([ages[i] if i >= 0 else a for i, a in template])), None
            found = self._partial(key, proc, argv, table)
            if found is not None:
                return found[0], found[1], None
        abstraction = self.abstraction
        if self._live is not None and self._live_key is key:
            server = self._live
        else:
            server = abstraction.thaw(key)
        self.executed += 1
        _, streams_in, places = abstraction.parts(shape)
        thawed = [v for v in (server.dbs[dbi][k] for dbi, k in places) if isinstance(v, TracedStream)]
        read_log: list[int] = []
        TimeReads.origins = read_log
        TimeReads.step += 1
        step = TimeReads.step
        reply = act(server, proc)
        TimeReads.step += 1  # what reads the server from here on is no part of the step
        TimeReads.origins = []
        touched = tuple([(s.header_step == step, s.groups_step == step) for s in thawed])
        sources: list[int] = []
        new = abstraction.key(server, sources)
        # The server still stands for ``key`` when nothing changed and every pending entry is the
        # one thawed at its place, time unwritten: the next step from ``key`` can reuse it.
        same_ages = sources == list(range(len(ages)))
        unchanged = same_ages and new == key
        if table is not None:
            read = tuple(dict.fromkeys(read_log)) if read_log else ()
            if unchanged:
                template = None
            elif same_ages:
                template = SAME_AGES
            else:
                template = tuple([(src, age if src < 0 else 0) for src, age in zip(sources, new[1], strict=True)])
            _remember(table, proc, argv, read, ages, reply, new[0], template)
            if len(thawed) == len(places) and touched.count((True, True)) != len(touched):
                self._remember_partial(key, proc, argv, server, thawed, touched, read, reply, new, sources)
        if unchanged:
            self._live_key, self._live = key, server
            return reply, key, server  # the very key object: callers recognise a step that changed nothing
        self._live_key, self._live = None, None
        return reply, new, server

    # -- steps that left parts of the state untouched (EXPLORE-MEMO-4) -----------------------------------
    def _remember_partial(self, key: Key, proc: int, argv: tuple[bytes, ...], server: Server,
                          thawed: list[TracedStream], touched: tuple[tuple[bool, bool], ...],
                          read: tuple[int, ...], reply: Reply | None, new: Key, sources: list[int]) -> None:
        """Remember a step that left some streams' header or groups untouched, under the parts it touched.

        The step did the same in every state with the same base (which it may have read), the same
        touched parts, the same number of pending entries in each stream (so ages keep their
        places) and the same ages read: the parts it did not touch it left as they were.
        """
        abstraction = self.abstraction
        base, streams_in, _ = abstraction.parts(key[0])
        base_out, streams_out, places_out = abstraction.parts(new[0])
        where = {id(s): j for j, s in enumerate(thawed)}
        outcome = []
        for (dbi, k), (header, groups, start, count) in zip(places_out, streams_out, strict=True):
            j = where.get(id(server.dbs[dbi][k]), -1)
            head_from: Any = header
            groups_from: Any = (groups, tuple((src, age if src < 0 else 0) for src, age in
                                              zip(sources[start:start + count], new[1][start:start + count],
                                                  strict=True)))
            if j >= 0:
                untouched_header, untouched_groups = not touched[j][0], not touched[j][1]
                if untouched_header:
                    if streams_in[j][0] != header:
                        return  # a part the step did not touch changed: not a step to remember by parts
                    head_from = j
                if untouched_groups:
                    if streams_in[j][1] != groups or sources[start:start + count] != list(
                            range(streams_in[j][2], streams_in[j][2] + streams_in[j][3])):
                        return
                    groups_from = j
            outcome.append((head_from, groups_from))
        projection = self._projection(key[0], streams_in, touched)
        patterns = self._partial_memo.setdefault((proc, argv, base), {})
        _note(patterns.setdefault(touched, {}).setdefault(projection, []), read, key[1],
              (read, reply, base_out, tuple(outcome)))

    def _projection(self, shape: int, streams: tuple[tuple[Any, Any, int, int], ...],
                    touched: tuple[tuple[bool, bool], ...]) -> int:
        """The number of what a step that touched ``touched`` sees of ``shape``'s streams (``streams``, its parts):
        the parts it touched and each stream's number of pending entries. Equal views, equal numbers."""
        found = self._projections.get((shape, touched))
        if found is None:
            found = self._projections[(shape, touched)] = self.abstraction.number(tuple(
                (part[0] if h else None, part[1] if g else None, part[3])
                for part, (h, g) in zip(streams, touched, strict=True)))
        return found

    def _partial(self, key: Key, proc: int, argv: tuple[bytes, ...],
                 table: dict[tuple[int, tuple[bytes, ...]], ByAges]) -> tuple[Reply | None, Key] | None:
        """The step from a step remembered by the parts it touched, or None; also remembered for ``key``'s shape."""
        abstraction = self.abstraction
        shape, ages = key
        base, streams, _ = abstraction.parts(shape)
        patterns = self._partial_memo.get((proc, argv, base))
        if not patterns:
            return None
        for touched, by_projection in patterns.items():
            by_ages = by_projection.get(self._projection(shape, streams, touched))
            done = None if by_ages is None else _recall(by_ages, ages)
            if done is not None:
                read, reply, base_out, outcome = done
                values = []
                template: list[tuple[int, int]] = []
                for head_from, groups_from in outcome:
                    header = streams[head_from][0] if type(head_from) is int else head_from
                    if type(groups_from) is int:
                        _, groups, start, count = streams[groups_from]
                        template.extend((i, 0) for i in range(start, start + count))
                    else:
                        groups, ages_from = groups_from
                        template.extend(ages_from)
                    values.append(header + (groups,))
                out = abstraction.compose(base_out, values)
                new_ages = tuple([ages[i] if i >= 0 else a for i, a in template])
                if out == shape and new_ages == ages:
                    _remember(table, proc, argv, read, ages, reply, out, None)
                    return reply, key
                _remember(table, proc, argv, read, ages, reply, out, tuple(template))
                return reply, (out, new_ages)
        return None


def _remember(table: dict[tuple[int, tuple[bytes, ...]], ByAges], proc: int, argv: tuple[bytes, ...],
              read: tuple[int, ...], ages: tuple[int, ...], reply: Reply | None, out: int,
              template: tuple[tuple[int, int], ...] | None) -> None:
    """Remember a step under its shape (EXPLORE-MEMO-1): ``read`` are the positions of the ages it read."""
    if template is not None and template is not SAME_AGES and len(template) == len(ages) \
            and all(src == at for at, (src, _) in enumerate(template)):
        template = SAME_AGES
    _note(table.setdefault((proc, argv), []), read, ages, (reply, out, template))


def _command_act(proc: int, argv: tuple[bytes, ...]) -> Callable[[Server, int], Reply | None]:
    """What running ``argv`` does: the model's dispatcher runs it from process ``proc``'s client."""
    return lambda server, _: server.execute(proc + 1, list(argv)).reply


def _restart(server: Server, proc: int) -> None:
    """A crash: the process's connection closes and a new one opens (EXPLORE-CRASH-1)."""
    server.close(proc + 1)
    server.connect(proc + 1)


_CRASH_ACT: Callable[[Server, int], Reply | None] = _restart


def initial_server(abstraction: Abstraction, setup: list[tuple[int, tuple[bytes, ...]]]) -> Server:
    """A fresh server at :data:`BASE_MS` with every process connected, after the ``setup`` commands (EXPLORE-1)."""
    server = Server(abstraction.dialect, ManualClock(BASE_MS), dict(abstraction.config))
    for proc in range(len(abstraction.names)):
        server.connect(proc + 1)
    for proc, argv in setup:
        server.execute(proc + 1, list(argv))
    return server
