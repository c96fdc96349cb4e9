"""streamworker's tests, on `xspec serve` through xspec's pytest plugin (fixtures xspec_server, xspec_trace)."""

from __future__ import annotations

import pytest
import redis
from streamworker import Worker, publish

from xspec.pytest_plugin import XspecServer, XspecTrace

STREAM, GROUP = "orders", "billing"


class Recorder:
    """A handler that remembers what it was given, and fails the entries it is told to fail once."""

    def __init__(self, fail_once: set[str] | None = None) -> None:
        self.seen: list[str] = []
        self.fail_once = set(fail_once or ())

    def __call__(self, entry_id: str, fields: dict[str, str]) -> None:
        self.seen.append(fields["order"])
        if fields["order"] in self.fail_once:
            self.fail_once.discard(fields["order"])
            raise RuntimeError("payment service unavailable")


def worker(server: XspecServer, name: str, handler: Recorder, **options: int) -> Worker:
    # driver_info None: no CLIENT SETINFO on connect, which the valkey-9.1 model does not cover yet
    client = server.client(decode_responses=True, driver_info=None)
    w = Worker(client, STREAM, GROUP, name, handler, **options)
    w.ensure_group()
    return w


def test_entries_are_handled_and_acknowledged(xspec_server: XspecServer, xspec_trace: XspecTrace) -> None:
    handler = Recorder()
    w = worker(xspec_server, "alice", handler)
    w.ensure_group()  # a second time: BUSYGROUP is not an error for the worker
    for order in ("1", "2", "3"):
        publish(w.client, STREAM, {"order": order})
    assert w.poll() == 3
    assert handler.seen == ["1", "2", "3"]
    assert w.pending() == 0
    w.client.close()
    xspec_trace.assert_conforms()  # everything the library sent, explained by the model


def test_a_failed_entry_stays_pending_until_retried(xspec_server: XspecServer) -> None:
    handler = Recorder(fail_once={"2"})
    w = worker(xspec_server, "alice", handler)
    for order in ("1", "2", "3"):
        publish(w.client, STREAM, {"order": order})
    assert w.poll() == 2
    assert w.pending() == 1
    assert w.retry() == 1
    assert handler.seen == ["1", "2", "3", "2"]
    assert w.pending() == 0


@pytest.mark.xspec(clock="virtual")
def test_a_crashed_consumers_entries_are_reclaimed_once_idle(xspec_server: XspecServer,
                                                             xspec_trace: XspecTrace) -> None:
    crashed, survivor = Recorder(fail_once={"1"}), Recorder()
    a = worker(xspec_server, "alice", crashed, claim_idle_ms=30_000)
    b = worker(xspec_server, "bob", survivor, claim_idle_ms=30_000)
    publish(a.client, STREAM, {"order": "1"})
    assert a.poll() == 0  # alice's handler failed and alice is gone: the entry stays hers, pending
    xspec_server.clock.advance(29_999)
    assert b.reclaim() == 0  # not idle long enough yet
    xspec_server.clock.advance(1)
    assert b.reclaim() == 1
    assert survivor.seen == ["1"]
    assert b.pending() == 0
    for w in (a, b):
        w.client.close()
    xspec_trace.assert_conforms()


def test_an_acknowledgement_lost_to_a_failover_means_a_second_delivery(xspec_server: XspecServer) -> None:
    handler = Recorder()
    w = worker(xspec_server, "alice", handler)
    publish(w.client, STREAM, {"order": "1"})
    xspec_server.faults.error("READONLY", command="xack")  # the primary became a replica mid-way
    with pytest.raises(redis.ReadOnlyError):
        w.poll()
    assert w.pending() == 1
    assert w.retry() == 1  # at least once: the handler sees the entry again
    assert handler.seen == ["1", "1"]


def test_blocking_poll_returns_when_nothing_arrives(xspec_server: XspecServer) -> None:
    w = worker(xspec_server, "alice", Recorder())
    assert w.poll(block_ms=50) == 0
