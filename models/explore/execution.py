"""Running one step of a process on the real model, from an abstract key.

:class:`Executor` materialises the key (:meth:`Abstraction.thaw`), lets the
model's dispatcher run the command (``Server.execute``: command lookup,
arity, MULTI queuing, the handler, blocked clients), and reads the new key.
Two shortcuts keep it cheap without changing what runs:

* the last materialised server is reused while a step leaves its key
  unchanged (a read that finds nothing, an XACK of an entry nobody holds),
  instead of being rebuilt for the next step from the same state;
* with ``memo`` on (the default), the reply and successor of
  ``(key, process, argv)`` are remembered with the pending entries' ages taken
  out of the key, together with the ages the model actually read
  (:class:`TracedNack` records them): the step does the same in every state
  that differs only in the ages it did not read, and the ages it leaves are
  either ones it found or ones it wrote (EXPLORE-MEMO-1, EXPLORE-MEMO-2). States that
  differ only in process programs or ghosts share the server's transitions too.
"""

from __future__ import annotations

from collections.abc import Callable

from xspec.models.clock import ManualClock
from xspec.models.explore.abstraction import BASE_MS, Abstraction, Key, TimeReads
from xspec.models.server import Server
from xspec.spec.invariants import violations as invariant_violations
from xspec.spec.resp import Reply

CRASH = (b"<crash>",)
"""The memo's name for a crash-and-restart, which sends no command."""

MemoEntry = tuple[tuple[int, ...], tuple[int, ...], Reply | None, Key, tuple[tuple[int, int], ...] | None]
"""(entries whose delivery time was read, their ages, reply, successor without ages, where its ages come
from: None when the step changes nothing)."""
Memo = dict[Key, dict[tuple[int, tuple[bytes, ...]], list[MemoEntry]]]
"""Key without ages -> (process, argv) -> what running it did, per combination of ages it read."""


class Executor:
    def __init__(self, abstraction: Abstraction, *, memo: bool = True) -> None:
        self.abstraction = abstraction
        self.memo: Memo | None = {} if memo else None
        self._live_key: Key | None = None
        self._live: Server | None = None
        self._split_key: Key | None = None
        self._untimed: Key = ()
        self._ages: tuple[int, ...] = ()
        self._table: dict[tuple[int, tuple[bytes, ...]], list[MemoEntry]] = {}
        self._verdicts: dict[Key, list[str]] = {}
        self.executed = 0

    def command(self, key: Key, proc: int, argv: tuple[bytes, ...]) -> tuple[Reply | None, Key, Server | None]:
        """Process ``proc`` (client ``proc + 1``) sends ``argv`` in state ``key``: reply, new key, live server.

        The server is None when the transition came from the memo.
        """
        return self._step(key, proc, argv, lambda server: server.execute(proc + 1, list(argv)).reply)

    def crash(self, key: Key, proc: int) -> tuple[Key, Server | None]:
        """Process ``proc`` dies and restarts: its connection closes and a new one opens (EXPLORE-CRASH-1)."""
        def restart(server: Server) -> None:
            server.close(proc + 1)
            server.connect(proc + 1)

        _, new, server = self._step(key, proc, CRASH, restart)
        return new, server

    def violations(self, key: Key, live: Server | None) -> list[str]:
        """The invariant violations (spec/invariants.py) of the state ``key``; ``live`` is a server in it, if any.

        Verdicts are remembered per key without ages when checking them read no
        delivery time (the invariants are about structure), so states that differ
        only in ages, or only in program states and ghosts, are checked once
        (EXPLORE-2, EXPLORE-MEMO-3).
        """
        untimed, _ = self.abstraction.split_ages(key)
        verdict = self._verdicts.get(untimed)
        if verdict is None:
            server = live if live is not None else self.abstraction.thaw(key)
            read_log: list[int] = []
            TimeReads.origins = read_log
            verdict = invariant_violations(server)
            TimeReads.origins = []
            if not read_log:
                self._verdicts[untimed] = verdict
        return verdict

    def _step(self, key: Key, proc: int, argv: tuple[bytes, ...],
              act: Callable[[Server], Reply | None]) -> tuple[Reply | None, Key, Server | None]:
        abstraction = self.abstraction
        if self.memo is not None:
            if key is not self._split_key:
                # Steps come in runs from one state: split it and find its memo table once per run.
                self._split_key = key
                self._untimed, self._ages = abstraction.split_ages(key)
                self._table = self.memo.setdefault(self._untimed, {})
            ages = self._ages
            table = self._table
            for read, seen, reply, out, template in table.get((proc, argv), ()):
                if all(ages[i] == age for i, age in zip(read, seen, strict=True)):
                    if template is None:  # the step leaves the state as it found it
                        return reply, key, None
                    return reply, abstraction.with_ages(out, [ages[i] if i >= 0 else a for i, a in template]), None
        if self._live is not None and self._live_key is key:
            server = self._live
        else:
            server = abstraction.thaw(key)
        self.executed += 1
        read_log: list[int] = []
        TimeReads.origins = read_log
        reply = act(server)
        TimeReads.origins = []
        sources: list[int] = []
        new = abstraction.key(server, sources)
        if self.memo is not None:
            untimed = self._untimed
            read = tuple(dict.fromkeys(read_log))
            out, out_ages = abstraction.split_ages(new)
            unchanged = out == untimed and sources == list(range(len(ages)))
            template = None if unchanged else \
                tuple((src, age if src < 0 else 0) for src, age in zip(sources, out_ages, strict=True))
            table.setdefault((proc, argv), []).append((read, tuple(ages[i] for i in read), reply, out, template))
        # The server still stands for ``key`` when nothing changed and every pending entry is the
        # one thawed at its place, time unwritten: the next step from ``key`` can reuse it.
        if new == key and sources == list(range(len(sources))):
            self._live_key, self._live = key, server
            return reply, key, server  # the very key object: callers recognise a step that changed nothing
        self._live_key, self._live = None, None
        return reply, new, server


def initial_server(abstraction: Abstraction, setup: list[tuple[int, tuple[bytes, ...]]]) -> Server:
    """A fresh server at :data:`BASE_MS` with every process connected, after the ``setup`` commands (EXPLORE-1)."""
    server = Server(abstraction.dialect, ManualClock(BASE_MS), dict(abstraction.config))
    for proc in range(len(abstraction.names)):
        server.connect(proc + 1)
    for proc, argv in setup:
        server.execute(proc + 1, list(argv))
    return server
