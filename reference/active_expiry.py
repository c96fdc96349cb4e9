"""The active expiry cycle: keys with a time are deleted with no command reading them (spec/rules/expiry.md).

Redis runs ``activeExpireCycle`` from its cron ``hz`` times a second: per database it takes a
sample of the keys with a time (20 by default), deletes those whose time has passed, and samples
again while more than a tenth of the sample was expired, within a quarter of the cron's period
(EXPIRE-ACTIVE-1). Each deletion is lazy expiry's (``keyspace.delete_expired``): the ``expired``
event, ``expired_keys``, and a DEL (UNLINK under ``lazyfree-lazy-expire``) for the AOF and the
replicas, one unit per key (EXPIRE-ACTIVE-3). A replica deletes nothing (it waits for its
primary's DEL), nor does a server while clients are paused (EXPIRE-ACTIVE-4).

With the wall clock a loop timer runs the cycle every ``1000/hz`` ms. With the virtual clock the
cycle runs when XSPEC.CLOCK moves the clock over one or more of those ticks, as if the time had
passed: every key whose time is before the last tick crossed goes, in the order of the keys'
times (EXPIRE-ACTIVE-5). The sampling walks each database's keys with a time with a cursor over a
snapshot of them, refreshed at each full pass, as Redis's cursor over its ``expires`` table does.
"""

from __future__ import annotations

import random
import time
from typing import Any

from xspec.reference.keyspace import clients_paused, delete_expired

__all__ = ["ActiveExpiry", "start_active_expiry", "clock_moved"]

KEYS_PER_LOOP = 20  # ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP
ACCEPTABLE_STALE_PERCENT = 10  # sample again while more than this share of the sample had expired
SLOW_TIME_PERCENT = 25  # share of the cron's period one cycle may take


class ActiveExpiry:
    """One server's active expiry cycle and its cursor over each database's keys with a time."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.snapshots: dict[int, list[bytes]] = {}  # db -> keys with a time at the start of this pass
        self.cursors: dict[int, int] = {}
        self.last_ms: int | None = None  # virtual clock: the clock when the cycle last looked
        self.deleting = False  # while a deletion of the cycle runs (--checked takes its messages)
        self.timer: Any = None
        self.cycles = 0

    def period_ms(self) -> int:
        """The cron's period: ``1000/hz`` ms (hz between 1 and 500, as Redis clamps it)."""
        try:
            hz = int(self.core.config.get("hz", "10"))
        except ValueError:
            hz = 10
        return 1000 // min(max(hz, 1), 500)

    def may_delete(self) -> bool:
        """Whether the cycle runs now: not on a replica (EXPIRE-ACTIVE-4), not while clients are
        paused (CLIENT PAUSE, XSPEC.NODE PAUSE), not on a server shutting down, not after DEBUG
        SET-ACTIVE-EXPIRE 0 (DEBUG-2)."""
        core = self.core
        if not core.active_expire_enabled:
            return False
        if core.replication is not None and core.replication.is_replica:
            return False
        server = core.server
        if server is not None and (server.paused or server.shutdown_asap):
            return False
        if core.pause_until:
            # checkClientPauseTimeoutAndReturnIfPaused: a pause past its end ends now (EXPIRE-PAUSE-2)
            if clients_paused(core, core.clock.now_ms()):  # not a reading of any command (--checked)
                return False
            core.check_pause()
            if core.pause_until:
                return False
        return True

    # -- the wall clock ----------------------------------------------------------------------------
    def arm(self) -> None:
        factory = self.core.timer_factory
        if factory is not None:
            self.timer = factory(self.period_ms() / 1000, self.tick)

    def tick(self) -> None:
        """The cron: one slow cycle, then the next tick."""
        server = self.core.server
        if server is not None and server.shutdown_asap:
            return
        try:
            if self.may_delete():
                self.slow_cycle()
        finally:
            self.arm()

    def slow_cycle(self) -> None:
        """``activeExpireCycle(SLOW)``: sample each database until few of its sample had expired."""
        self.cycles += 1
        deadline = time.perf_counter() + self.period_ms() * SLOW_TIME_PERCENT / 100_000
        now = self.core.clock.now_ms()  # not a reading of any command (--checked)
        for dbid, db in enumerate(self.core.dbs):
            expires = db.expires
            if not expires:
                self.snapshots.pop(dbid, None)
                continue
            while True:
                sampled = expired = 0
                for key in self._sample(dbid, expires):
                    when = expires.get(key)
                    if when is None:
                        continue
                    sampled += 1
                    if now > when:
                        self.delete(dbid, key, now)
                        expired += 1
                if not sampled or expired * 100 <= sampled * ACCEPTABLE_STALE_PERCENT:
                    break
                if time.perf_counter() > deadline:
                    return

    def _sample(self, dbid: int, expires: dict[bytes, int]) -> list[bytes]:
        """The next keys still with a time in the pass over the database's keys with a time; a new pass
        at the end, or when most of the pass's keys are gone (FLUSHALL, many deletions)."""
        keys = self.snapshots.get(dbid)
        at = self.cursors.get(dbid, 0)
        if keys is None or at >= len(keys) or len(keys) - at > 2 * len(expires) + KEYS_PER_LOOP:
            keys = list(expires)
            random.shuffle(keys)  # the table's order is no order of the keys' times
            self.snapshots[dbid] = keys
            at = 0
        sample: list[bytes] = []
        while at < len(keys) and len(sample) < KEYS_PER_LOOP:
            if keys[at] in expires:
                sample.append(keys[at])
            at += 1
        self.cursors[dbid] = at
        return sample

    # -- the virtual clock -------------------------------------------------------------------------
    def clock_moved(self) -> None:
        """XSPEC.CLOCK moved the virtual clock: the cycles of the ticks it crossed (EXPIRE-ACTIVE-5)."""
        period = self.period_ms()
        now = self.core.clock.now_ms()
        last, self.last_ms = self.last_ms, now
        if last is None or now // period <= last // period or not self.may_delete():
            return  # no tick crossed (or the clock went back)
        at = now // period * period
        due = sorted((when, dbid, key) for dbid, db in enumerate(self.core.dbs)
                     for key, when in db.expires.items() if at > when)
        for when, dbid, key in due:
            if self.core.dbs[dbid].expires.get(key) == when:  # a deletion before may have changed it
                self.delete(dbid, key, at)

    # -- one deletion ------------------------------------------------------------------------------
    def delete(self, dbid: int, key: bytes, now: int) -> None:
        """Delete one expired key as its own unit of propagation (EXPIRE-ACTIVE-3); --checked mirrors it."""
        core = self.core
        self.deleting = True
        try:
            delete_expired(core, dbid, key)
            if core.propagation is not None:
                core.propagation.flush()
            observer = core.observer
            mirror = getattr(observer, "actively_expired", None) if observer is not None else None
            if mirror is not None:
                mirror(dbid, key, now)
        finally:
            self.deleting = False
        if core.ready_keys:
            core.handle_ready()  # stream readers blocked on the key learn it is gone (BLOCK-DIALECT-1)


def start_active_expiry(core: Any) -> ActiveExpiry:
    """Give ``core`` its cycle; with the wall clock, arm the cron's timer (``core.timer_factory``)."""
    cycle = ActiveExpiry(core)
    core.active_expiry = cycle
    if core.clock.virtual:
        cycle.last_ms = core.clock.now_ms()
    else:
        cycle.arm()
    return cycle


def clock_moved(core: Any) -> None:
    """XSPEC.CLOCK SET/ADVANCE moved the clock: run the cycles of the time that passed."""
    cycle = core.active_expiry
    if cycle is not None:
        cycle.clock_moved()
