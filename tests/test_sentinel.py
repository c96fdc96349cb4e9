"""``xspec sentinel`` against Redis 7.0.15's redis-sentinel (spec/rules/sentinel.md).

The state machine is tested on explicit time; the server against the real Sentinel: the same deployment
(a real 7.0.15 primary and two replicas) watched by each, the primary stopped, and the two must choose the
same replica and publish the same events in the same order. A real and an xspec Sentinel also watch one
deployment together with quorum 2: they find each other, vote, and agree on the new primary. Clients follow
through redis-py's Sentinel support.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import wait_for_ping
from xspec.reference.clock import VirtualClock
from xspec.reference.sentinel_server import SentinelThread
from xspec.reference.sentinel_state import FailoverState, Flag, Instance, Sentinel
from xspec.spec.resp import Array, Bulk, Error, Int, Map, NullArray, Push, Simple
from xspec.traces.record.client import RespConnection
from xspec.traces.scenarios.runner import free_port, start_redis, stop_process

DOWN_AFTER = 1000
# The state machine's times are the epoch's milliseconds, as Redis's mstime(): a failover never started
# counts as started at 0, long enough ago.
T = 1_800_000_000_000
FAILOVER_TIMEOUT = 10000


# -- the state machine on explicit time ----------------------------------------------------------------


def _sentinel() -> tuple[Sentinel, list[tuple[str, str]]]:
    events: list[tuple[str, str]] = []
    s = Sentinel(publish=lambda channel, message: events.append((channel, message)), my_id="a" * 40)
    return s, events


def _replica_info(port: int, *, priority: int = 100, offset: int = 0, runid: str = "b" * 40,
                  link: str = "up") -> str:
    return (f"# Server\r\nrun_id:{runid}\r\n# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n"
            f"master_port:{port}\r\nmaster_link_status:{link}\r\nslave_repl_offset:{offset}\r\n"
            f"slave_priority:{priority}\r\nreplica_announced:1\r\n")


def _monitored(now: int = T, replicas: tuple[tuple[int, int, int, str], ...] = ()) -> tuple[Sentinel, list[
        tuple[str, str]], dict[int, Instance]]:
    """A Sentinel watching a primary on port 7000 whose INFO lists ``replicas`` (port, priority, offset, runid)."""
    s, events = _sentinel()
    master = s.monitor("m", "127.0.0.1", 7000, 1, now)
    master.down_after = DOWN_AFTER
    master.link.connected = True
    lines = "".join(f"slave{i}:ip=127.0.0.1,port={p},state=online,offset={o},lag=0\r\n"
                    for i, (p, _, o, _) in enumerate(replicas))
    s.on_info(master, f"run_id:{'c' * 40}\r\nrole:master\r\nconnected_slaves:{len(replicas)}\r\n{lines}", now)
    found = {}
    for port, priority, offset, runid in replicas:
        r = master.slaves[("127.0.0.1", port)]
        r.down_after = DOWN_AFTER
        r.link.connected = True
        s.on_info(r, _replica_info(7000, priority=priority, offset=offset, runid=runid), now)
        found[port] = r
    return s, events, found


def test_replicas_are_chosen_by_priority_then_offset_then_run_id():
    """SENTINEL-SELECT-1, SENTINEL-SELECT-2."""
    s, _, r = _monitored(replicas=((7001, 100, 50, "b" * 40), (7002, 50, 10, "c" * 40), (7003, 50, 10, "a" * 40),
                                   (7004, 0, 99, "0" * 40)))
    master = s.masters["m"]
    assert s.select_slave(master, T) is r[7003]  # priority 50 beats 100; equal offsets: the smaller run id
    r[7003].slave_repl_offset = 5
    assert s.select_slave(master, T) is r[7002]  # then the larger offset
    r[7002].flags |= Flag.S_DOWN
    r[7003].link.connected = False
    assert s.select_slave(master, T) is r[7001]  # SDOWN and disconnected replicas are out; priority 0 never
    assert s.select_slave(master, T + 40_000) is None  # INFO older than 3 × 10 s: none is usable


def test_down_then_failover_from_the_state_machine():
    """SENTINEL-DOWN-1, SENTINEL-DOWN-2, SENTINEL-DOWN-3, SENTINEL-INFO-1, SENTINEL-INFO-3, SENTINEL-INFO-7,
    SENTINEL-INFO-8, SENTINEL-FAILOVER-1, SENTINEL-FAILOVER-2, SENTINEL-FAILOVER-3, SENTINEL-FAILOVER-4,
    SENTINEL-FAILOVER-6, SENTINEL-FAILOVER-7, SENTINEL-FAILOVER-8, SENTINEL-FAILOVER-9,
    SENTINEL-SLAVEOF-1, SENTINEL-SWITCH-1, SENTINEL-TIMER-1, SENTINEL-EVENT-1."""
    s, events, r = _monitored(replicas=((7001, 100, 5, "b" * 40), (7002, 100, 9, "c" * 40)))
    master = s.masters["m"]
    master.link.act_ping_time = T + 10  # a PING sent at 10 ms and never answered
    s.tick(T + 1000)
    assert master.flags & Flag.S_DOWN == 0
    for ri in r.values():  # the replicas keep answering
        s.on_ping_reply(ri, "PONG", T + 1005)
    s.tick(T + 1011)
    assert [c for c, _ in events[-7:]] == ["+sdown", "+odown", "+new-epoch", "+try-failover",
                                            "+vote-for-leader", "+elected-leader", "+failover-state-select-slave"]
    s.tick(T + 1020)  # one state per timer run, as Redis: the replica is chosen
    requests = s.tick(T + 1030)  # then told REPLICAOF NO ONE
    assert master.promoted is r[7002] and master.failover_state == FailoverState.WAIT_PROMOTION
    assert [q.argv for q in requests if q.target is r[7002]][:2] == [("MULTI",), ("SLAVEOF", "NO", "ONE")]
    s.on_info(r[7002], "role:master\r\n", T + 1100)
    assert master.failover_state == FailoverState.RECONF_SLAVES and master.config_epoch == 1
    requests = s.tick(T + 1200)
    assert ("SLAVEOF", "127.0.0.1", "7002") in [q.argv for q in requests if q.target is r[7001]]
    s.on_info(r[7001], _replica_info(7002), T + 1300)
    s.tick(T + 1400)
    assert [c for c, _ in events if c.startswith("+slave-reconf") or c in ("+failover-end", "+switch-master")] == [
        "+slave-reconf-sent", "+slave-reconf-inprog", "+slave-reconf-done", "+failover-end", "+switch-master"]
    assert master.address == ("127.0.0.1", 7002) and ("127.0.0.1", 7000) in master.slaves
    assert ("+switch-master", "m 127.0.0.1 7000 127.0.0.1 7002") in events


def test_objective_down_needs_the_quorum_and_the_leader_a_majority():
    """SENTINEL-DOWN-3, SENTINEL-VOTE-1, SENTINEL-VOTE-3, SENTINEL-VOTE-4, SENTINEL-HELLO-2."""
    s, events, _ = _monitored()
    master = s.masters["m"]
    master.quorum = 2
    s.on_hello(f"127.0.0.1,26380,{'d' * 40},0,m,127.0.0.1,7000,0", T)
    s.on_hello(f"127.0.0.1,26381,{'e' * 40},0,m,127.0.0.1,7000,0", T)
    assert [c for c, _ in events].count("+sentinel") == 2
    master.link.act_ping_time = T + 1
    s.tick(T + 1500)
    assert master.flags & Flag.S_DOWN and not master.flags & Flag.O_DOWN  # 1 of 2
    other = master.sentinels[("127.0.0.1", 26380)]
    s.on_is_master_down_reply(other, 1, "*", 0, T + 1500)
    s.tick(T + 1600)
    assert master.flags & Flag.O_DOWN and master.failover_state == FailoverState.WAIT_START
    assert ("+odown", "master m 127.0.0.1 7000 #quorum 2/2") in events
    s.tick(T + 1700)  # only its own vote of three voters: not elected yet
    assert master.failover_state == FailoverState.WAIT_START
    s.on_is_master_down_reply(other, 1, s.my_id, 1, T + 1700)
    s.tick(T + 1800)
    assert master.failover_state > FailoverState.WAIT_START  # two of three
    assert s.vote(master, 1, "f" * 40, T + 1800) == (s.my_id, 1)  # one vote per epoch
    assert s.vote(master, 2, "f" * 40, T + 1800) == ("f" * 40, 2)


def test_a_newer_configuration_from_hello_switches_the_primary():
    """SENTINEL-HELLO-2, SENTINEL-HELLO-3, SENTINEL-SWITCH-1."""
    s, events, _ = _monitored(replicas=((7001, 100, 0, "b" * 40),))
    s.on_hello(f"127.0.0.1,26380,{'d' * 40},3,m,127.0.0.1,7001,3", T + 50)
    master = s.masters["m"]
    assert master.address == ("127.0.0.1", 7001) and master.config_epoch == 3 and s.current_epoch == 3
    assert [c for c, _ in events][-5:] == ["+sentinel", "+new-epoch", "+config-update-from", "+switch-master",
                                           "+slave"]
    s.on_hello(f"127.0.0.1,26380,{'d' * 40},3,m,127.0.0.1,7000,2", 60)  # older: ignored
    assert master.address == ("127.0.0.1", 7001)
    s.on_hello("garbage", T + 70)
    s.on_hello(f"127.0.0.1,26380,{'d' * 40},3,unknown,127.0.0.1,7000,9", T + 70)
    assert master.address == ("127.0.0.1", 7001)


def test_info_reboot_convert_and_fix_config():
    """SENTINEL-INFO-2 (a new run id), SENTINEL-INFO-5 (a replica claiming primary is converted back) and
    SENTINEL-INFO-6 (a replica of another address is repointed), each only after its waiting time."""
    s, events, r = _monitored(replicas=((7001, 100, 0, "b" * 40),))
    master, replica = s.masters["m"], r[7001]
    s.on_info(master, f"run_id:{'f' * 40}\r\nrole:master\r\n", T + 10)
    assert events[-1] == ("+reboot", "master m 127.0.0.1 7000")
    assert s.on_info(replica, "role:master\r\n", T + 20) == []  # it just changed role: wait 8 s
    assert ("-role-change", "slave 127.0.0.1:7001 127.0.0.1 7001 @ m 127.0.0.1 7000 new reported role is master") \
        in events
    s.on_info(master, "role:master\r\n", T + 8030)
    requests = s.on_info(replica, "role:master\r\n", T + 8040)
    assert [q.argv[1:] for q in requests if q.argv[0] == "SLAVEOF"] == [("127.0.0.1", "7000")]
    assert events[-1][0] == "+convert-to-slave"
    s.on_info(replica, _replica_info(7999), T + 8050)  # now replicating from an address nobody configured
    s.on_info(master, "role:master\r\n", T + 8050 + master.failover_timeout)
    requests = s.on_info(replica, _replica_info(7999), T + 8060 + master.failover_timeout)
    assert [q.argv[1:] for q in requests if q.argv[0] == "SLAVEOF"] == [("127.0.0.1", "7000")]
    assert events[-1][0] == "+fix-slave-config"


def test_a_promotion_that_never_shows_aborts():
    """SENTINEL-FAILOVER-5: waiting longer than failover-timeout for the promotion aborts the failover, and
    SENTINEL-RESET-1: a reset forgets the replicas and the failover."""
    s, events, r = _monitored(replicas=((7001, 100, 0, "b" * 40),))
    master = s.masters["m"]
    master.failover_timeout = 5000
    s.start_failover(master, T)
    master.flags |= Flag.FORCE_FAILOVER
    for t in (T + 10, T + 20, T + 30):
        s.tick(t)
    assert master.failover_state == FailoverState.WAIT_PROMOTION
    s.tick(T + 30 + 5001)
    assert ("-failover-abort-slave-timeout", "master m 127.0.0.1 7000") in events
    assert master.failover_state == FailoverState.NONE and master.promoted is None
    assert not r[7001].flags & Flag.PROMOTED
    assert s.reset_matching("m*", T + 6000) == 1 and master.slaves == {}
    assert events[-1] == ("+reset-master", "master m 127.0.0.1 7000")


def test_subscriber_mode_as_redis_sentinel(real_binary: str):
    """SENTINEL-CMD-2: what a RESP2 subscriber may send, compared with redis-sentinel's answers."""
    workdir = tempfile.mkdtemp(prefix="xspec-sentinel-")
    real_proc, real_port = _start_real_sentinel(real_binary, workdir, free_port(), 1)
    try:
        with SentinelThread(port=0) as ours:
            answers = []
            for port in (real_port, ours.port):
                c = RespConnection("127.0.0.1", port)
                got = [c.call([b"UNSUBSCRIBE"]), c.call([b"SUBSCRIBE", b"a"]), c.call([b"GET", b"x"]),
                       c.call([b"PING"]), c.call([b"PING", b"hi"]), c.call([b"PSUBSCRIBE", b"+*"]),
                       c.call([b"UNSUBSCRIBE", b"a"]), c.call([b"SENTINEL", b"myid"])]
                c.close()
                answers.append(got)
            assert answers[0] == answers[1]
    finally:
        stop_process(real_proc)


# -- real deployments ----------------------------------------------------------------------------------------


@dataclass
class Deployment:
    """A real 7.0.15 primary and two replicas (priorities 100 and 50), ``repl-diskless-sync-delay 0``."""

    primary: tuple[subprocess.Popen[bytes], int]
    replicas: list[tuple[subprocess.Popen[bytes], int]]
    workdir: str

    def roles(self) -> dict[int, str]:
        return {self.primary[1]: "P", self.replicas[0][1]: "R100", self.replicas[1][1]: "R50"}

    def stop(self) -> None:
        for proc, _ in [self.primary, *self.replicas]:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
            stop_process(proc)


def _deploy(binary: str) -> Deployment:
    workdir = tempfile.mkdtemp(prefix="xspec-sentinel-")
    primary = start_redis(binary, tempfile.mkdtemp(dir=workdir))
    # Every node may become a primary: no 5 s wait before a full sync (the replication harness's setting).
    RespConnection("127.0.0.1", primary[1]).call([b"CONFIG", b"SET", b"repl-diskless-sync-delay", b"0"])
    replicas = []
    for priority in (100, 50):
        proc, port = start_redis(binary, tempfile.mkdtemp(dir=workdir))
        c = RespConnection("127.0.0.1", port)
        c.call([b"CONFIG", b"SET", b"repl-diskless-sync-delay", b"0"])
        c.call([b"CONFIG", b"SET", b"replica-priority", str(priority).encode()])
        c.call([b"REPLICAOF", b"127.0.0.1", str(primary[1]).encode()])
        c.close()
        replicas.append((proc, port))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        info = RespConnection("127.0.0.1", primary[1]).call([b"INFO", b"replication"])
        if isinstance(info, Bulk) and info.value.count(b"state=online") == 2:
            break
        time.sleep(0.05)
    return Deployment(primary, replicas, workdir)


def _start_real_sentinel(binary: str, workdir: str, master_port: int, quorum: int) -> tuple[subprocess.Popen[bytes],
                                                                                             int]:
    port = free_port()
    conf = Path(workdir) / f"sentinel-{port}.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
                    f"sentinel monitor mymaster 127.0.0.1 {master_port} {quorum}\n"
                    f"sentinel down-after-milliseconds mymaster {DOWN_AFTER}\n"
                    f"sentinel failover-timeout mymaster {FAILOVER_TIMEOUT}\n")
    proc = subprocess.Popen([binary, str(conf), "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ping(port)
    except AssertionError:
        stop_process(proc)
        raise
    return proc, port


class EventLog:
    """Every event a Sentinel publishes, read through PSUBSCRIBE * on a thread."""

    def __init__(self, port: int) -> None:
        self.conn = RespConnection("127.0.0.1", port)
        self.conn.send([b"PSUBSCRIBE", b"*"])
        assert isinstance(self.conn.recv(5), Array | Push)
        self.events: list[tuple[str, str]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                reply = self.conn.recv(60)
            except Exception:
                return
            if isinstance(reply, Array | Push) and len(reply.items) == 4:
                channel, message = reply.items[2], reply.items[3]
                assert isinstance(channel, Bulk) and isinstance(message, Bulk)
                self.events.append((channel.value.decode(), message.value.decode()))

    def wait_for(self, channel: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(c == channel for c, _ in self.events):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.conn.close()


def _normalised(events: list[tuple[str, str]], roles: dict[int, str]) -> list[str]:
    """Events with ports named by role and run ids hidden; debug-level churn left out."""
    out = []
    for channel, message in events:
        text = re.sub(r"\b[0-9a-f]{40}\b", "<id>", f"{channel} {message}")
        for port, role in roles.items():
            text = re.sub(rf"127\.0\.0\.1:{port}\b", role, text)
            text = re.sub(rf"\b{port}\b", role, text)
        out.append(text)
    return out


@pytest.fixture
def deployments(real_binary: str) -> Iterator[tuple[Deployment, Deployment]]:
    first, second = _deploy(real_binary), _deploy(real_binary)
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def _failover_phase(events: list[str]) -> list[str]:
    """From +sdown of the primary to +switch-master, without the timing-dependent +slave-reconf-inprog
    (Redis sees it one INFO before +slave-reconf-done or in the same one, by how fast the replica syncs)."""
    start = next(i for i, e in enumerate(events) if e.startswith("+sdown master"))
    end = next(i for i, e in enumerate(events) if e.startswith("+switch-master"))
    return [e for e in events[start:end + 1] if not e.startswith(("+slave-reconf-inprog", "-role-change"))]


def test_the_same_failover_as_redis_sentinel(real_binary: str, deployments: tuple[Deployment, Deployment]):
    """The whole failover against redis-sentinel's: SENTINEL-EVENT-1, SENTINEL-LINK-1, SENTINEL-LINK-2,
    SENTINEL-TIMER-2, SENTINEL-INFO-4, SENTINEL-SELECT-2, SENTINEL-FAILOVER-7, SENTINEL-CMD-3."""
    real_dep, xspec_dep = deployments
    real_proc, real_port = _start_real_sentinel(real_binary, real_dep.workdir, real_dep.primary[1], 1)
    with SentinelThread(monitors=(("mymaster", "127.0.0.1", xspec_dep.primary[1], 1),), port=0,
                        down_after_ms=DOWN_AFTER, failover_timeout_ms=FAILOVER_TIMEOUT) as ours:
        logs = {"real": EventLog(real_port), "xspec": EventLog(ours.port)}
        try:
            time.sleep(2.5)  # both have read INFO from the primary and the replicas
            for dep in deployments:
                os.kill(dep.primary[0].pid, signal.SIGSTOP)
            for name, log in logs.items():
                assert log.wait_for("+switch-master", 20), f"{name}: {log.events}"
            real = _failover_phase(_normalised(logs["real"].events, real_dep.roles()))
            ours_seen = _failover_phase(_normalised(logs["xspec"].events, xspec_dep.roles()))
            assert ours_seen == real
            assert "+selected-slave slave R50 127.0.0.1 R50 @ mymaster 127.0.0.1 P" in real
            for port, dep in ((real_port, real_dep), (ours.port, xspec_dep)):
                addr = RespConnection("127.0.0.1", port).call([b"SENTINEL", b"get-master-addr-by-name",
                                                                b"mymaster"])
                assert addr == Array((Bulk(b"127.0.0.1"), Bulk(str(dep.replicas[1][1]).encode())))
        finally:
            for log in logs.values():
                log.close()
            stop_process(real_proc)


_SAME_REPLIES = (
    [b"SENTINEL", b"master", b"nosuch"], [b"SENTINEL", b"replicas", b"nosuch"], [b"SENTINEL", b"nosuch"],
    [b"SENTINEL", b"master"], [b"SENTINEL", b"get-master-addr-by-name", b"nosuch"],
    [b"SENTINEL", b"monitor", b"x", b"not-an-ip", b"1", b"1"], [b"SENTINEL", b"monitor", b"x", b"127.0.0.1", b"1",
                                                                 b"0"],
    [b"SENTINEL", b"monitor", b"mymaster", b"127.0.0.1", b"6379", b"1"], [b"SENTINEL", b"ckquorum", b"mymaster"],
    [b"SENTINEL", b"failover", b"nosuch"], [b"SENTINEL", b"set", b"mymaster", b"nosuch", b"1"],
    [b"SENTINEL", b"reset", b"nomatch*"], [b"SENTINEL", b"pending-scripts"], [b"ROLE"], [b"PING"],
    [b"PUBLISH", b"chan", b"x"], [b"GET", b"x"], [b"CLIENT", b"GETNAME"], [b"SENTINEL", b"HELP"],
    [b"SENTINEL", b"is-master-down-by-addr", b"127.0.0.1", b"1", b"0", b"*"],
)


def test_replies_equal_redis_sentinels(real_binary: str, deployments: tuple[Deployment, Deployment]):
    """SENTINEL-CMD-1, SENTINEL-CMD-3, SENTINEL-CMD-8, SENTINEL-CMD-9, SENTINEL-CMD-11, SENTINEL-CMD-12,
    SENTINEL-CMD-13, SENTINEL-REPLY-1, SENTINEL-REPLY-3, SENTINEL-RESET-2."""
    real_dep, xspec_dep = deployments
    real_proc, real_port = _start_real_sentinel(real_binary, real_dep.workdir, real_dep.primary[1], 1)
    try:
        with SentinelThread(monitors=(("mymaster", "127.0.0.1", xspec_dep.primary[1], 1),), port=0,
                            down_after_ms=DOWN_AFTER, failover_timeout_ms=FAILOVER_TIMEOUT) as ours:
            time.sleep(1.5)
            real_c, ours_c = RespConnection("127.0.0.1", real_port), RespConnection("127.0.0.1", ours.port)
            for command in _SAME_REPLIES:
                assert ours_c.call(command) == real_c.call(command), command
            for command in ([b"SENTINEL", b"master", b"mymaster"], [b"SENTINEL", b"replicas", b"mymaster"]):
                real, mine = real_c.call(command), ours_c.call(command)
                assert _field_names(mine) == _field_names(real), command
            real_c.call([b"HELLO", b"3"])
            ours_c.call([b"HELLO", b"3"])
            real, mine = real_c.call([b"SENTINEL", b"master", b"mymaster"]), ours_c.call([b"SENTINEL", b"master",
                                                                                         b"mymaster"])
            assert isinstance(real, Map) and isinstance(mine, Map)
            assert _field_names(mine) == _field_names(real)
    finally:
        stop_process(real_proc)


def _field_names(reply: object) -> list[list[bytes]]:
    def names(r: object) -> list[bytes]:
        if isinstance(r, Map):
            return [k.value for k, _ in r.pairs if isinstance(k, Bulk)]
        assert isinstance(r, Array)
        return [k.value for k in r.items[::2] if isinstance(k, Bulk)]
    if isinstance(reply, Array) and reply.items and isinstance(reply.items[0], Array | Map):
        return [names(r) for r in reply.items]
    return [names(reply)]


def test_a_real_and_an_xspec_sentinel_agree(real_binary: str, deployments: tuple[Deployment, Deployment]):
    """Quorum 2 with one Sentinel of each kind: hello discovery, the down vote and the leader election
    (SENTINEL-HELLO-1, SENTINEL-HELLO-2, SENTINEL-VOTE-1, SENTINEL-VOTE-2, SENTINEL-VOTE-3, SENTINEL-VOTE-4)."""
    dep = deployments[0]
    real_proc, real_port = _start_real_sentinel(real_binary, dep.workdir, dep.primary[1], 2)
    try:
        with SentinelThread(monitors=(("mymaster", "127.0.0.1", dep.primary[1], 2),), port=0,
                            down_after_ms=DOWN_AFTER, failover_timeout_ms=FAILOVER_TIMEOUT) as ours:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                seen = [RespConnection("127.0.0.1", p).call([b"SENTINEL", b"sentinels", b"mymaster"])
                        for p in (real_port, ours.port)]
                if all(isinstance(s, Array) and len(s.items) == 1 for s in seen):
                    break
                time.sleep(0.2)
            else:
                pytest.fail(f"the Sentinels did not find each other: {seen}")
            os.kill(dep.primary[0].pid, signal.SIGSTOP)
            expected = Array((Bulk(b"127.0.0.1"), Bulk(str(dep.replicas[1][1]).encode())))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                addrs = [RespConnection("127.0.0.1", p).call([b"SENTINEL", b"get-master-addr-by-name", b"mymaster"])
                         for p in (real_port, ours.port)]
                if addrs == [expected, expected]:
                    break
                time.sleep(0.2)
            else:
                pytest.fail(f"no agreement on the new primary: {addrs}")
    finally:
        stop_process(real_proc)


def test_redis_py_follows_a_sentinel_failover(real_binary: str, deployments: tuple[Deployment, Deployment]):
    """Within 5 s of SENTINEL FAILOVER, redis-py's Sentinel names the new primary and a consumer group runs on it
    (SENTINEL-CMD-5).

    The old primary is not stopped by SENTINEL FAILOVER (as with redis-sentinel, SENTINEL-CMD-5): a connection
    redis-py already holds to it keeps writing there until Sentinel turns it into a replica, so the client
    here asks Sentinel again, as a client does after a +switch-master.
    """
    redis = pytest.importorskip("redis")
    from redis.sentinel import Sentinel as PySentinel

    dep = deployments[0]
    new_primary = ("127.0.0.1", dep.replicas[1][1])
    with SentinelThread(monitors=(("mymaster", "127.0.0.1", dep.primary[1], 1),), port=0,
                        down_after_ms=DOWN_AFTER, failover_timeout_ms=FAILOVER_TIMEOUT) as ours:
        time.sleep(1.5)
        sentinel = PySentinel([("127.0.0.1", ours.port)], socket_timeout=1)
        before = sentinel.master_for("mymaster", socket_timeout=1)
        before.xadd("s", {"f": "before"})
        before.xgroup_create("s", "g", id="0")
        before.wait(2, 1000)
        assert RespConnection("127.0.0.1", ours.port).call([b"SENTINEL", b"failover", b"mymaster"]) == Simple("OK")
        started = time.monotonic()
        while sentinel.discover_master("mymaster") != new_primary:
            assert time.monotonic() - started < 5, "Sentinel did not name the new primary within 5 s"
            time.sleep(0.05)
        after = sentinel.master_for("mymaster", socket_timeout=1)
        while True:
            try:
                after.xadd("s", {"f": "after"})
                break
            except (redis.exceptions.ConnectionError, redis.exceptions.ReadOnlyError):
                assert time.monotonic() - started < 5, "writes did not succeed within 5 s of SENTINEL FAILOVER"
                time.sleep(0.05)
        assert after.connection_pool.get_master_address() == new_primary
        read = after.xreadgroup("g", "c", {"s": ">"})
        assert [fields[b"f"] for _, fields in read[0][1]] == [b"before", b"after"]


def test_on_a_virtual_clock_the_failover_waits_for_the_clock(real_binary: str,
                                                           deployments: tuple[Deployment, Deployment]):
    """SENTINEL-CMD-14, SENTINEL-TIMING: a stopped primary is not down until the Sentinel's clock passes down-after."""
    dep = deployments[0]
    with SentinelThread(monitors=(("mymaster", "127.0.0.1", dep.primary[1], 1),), port=0, clock=VirtualClock(),
                        down_after_ms=DOWN_AFTER, failover_timeout_ms=FAILOVER_TIMEOUT) as ours:
        c = RespConnection("127.0.0.1", ours.port)
        log = EventLog(ours.port)
        try:
            for _ in range(20):  # let INFO and PING go round on a clock that moves only when told
                c.call([b"XSPEC.CLOCK", b"ADVANCE", b"100"])
                time.sleep(0.05)
            stopped_at = c.call([b"XSPEC.CLOCK", b"GET"])
            assert isinstance(stopped_at, Int)
            os.kill(dep.primary[0].pid, signal.SIGSTOP)
            time.sleep(2 * DOWN_AFTER / 1000)
            assert not any(ch == "+sdown" for ch, _ in log.events), log.events
            deadline = time.monotonic() + 20
            while not log.wait_for("+switch-master", 0.05):
                assert time.monotonic() < deadline, log.events
                c.call([b"XSPEC.CLOCK", b"ADVANCE", b"100"])
            sdown = next(ms for ms, ch, _ in ours.events if ch == "+sdown")
            assert sdown - stopped_at.value >= DOWN_AFTER  # on the virtual clock: 2 s of wall time did nothing
            assert c.call([b"SENTINEL", b"get-master-addr-by-name", b"mymaster"]) == Array(
                (Bulk(b"127.0.0.1"), Bulk(str(dep.replicas[1][1]).encode())))
            assert c.call([b"XSPEC.CLOCK", b"SET", b"x"]) == Error("ERR value is not an integer or out of range")
        finally:
            log.close()
    with SentinelThread(port=0) as wall:
        assert RespConnection("127.0.0.1", wall.port).call([b"XSPEC.CLOCK", b"ADVANCE", b"1"]) == Error(
            "ERR XSPEC.CLOCK SET and ADVANCE need a server started with --clock virtual")


def _lone_primary_events(binary: str, argv: list[str], workdir: str) -> list[str]:
    """A real Sentinel watching a lone primary started by ``argv``: its events from a stop to a resume."""
    port = free_port()
    proc = subprocess.Popen([*argv, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_ping(port, 20)
        sentinel, sentinel_port = _start_real_sentinel(binary, workdir, port, 1)
        log = EventLog(sentinel_port)
        try:
            time.sleep(1.5)
            master = RespConnection("127.0.0.1", sentinel_port).call([b"SENTINEL", b"master", b"mymaster"])
            fields = dict(zip(master.items[::2], master.items[1::2], strict=True))  # type: ignore[union-attr]
            assert fields[Bulk(b"flags")] == Bulk(b"master") and len(fields[Bulk(b"runid")].value) == 40  # type: ignore[union-attr]
            os.kill(proc.pid, signal.SIGSTOP)
            assert log.wait_for("-failover-abort-no-good-slave", 15), log.events
            os.kill(proc.pid, signal.SIGCONT)
            assert log.wait_for("-odown", 15), log.events
            return _normalised(log.events, {port: "P"})
        finally:
            log.close()
            stop_process(sentinel)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        stop_process(proc)


def test_a_real_sentinel_watches_xspec_serve_as_a_real_primary(real_binary: str):
    """redis-sentinel 7.0.15 monitors ``xspec serve`` (INFO, PING, the hello channel) as it does a real primary:
    the same events when the lone primary stops and comes back."""
    workdir = tempfile.mkdtemp(prefix="xspec-sentinel-")
    real = _lone_primary_events(real_binary, [real_binary, "--save", "", "--appendonly", "no"], workdir)
    ours = _lone_primary_events(real_binary, [sys.executable, "-m", "xspec", "serve"], workdir)
    assert ours == real
    assert real[:2] == ["+sdown master mymaster 127.0.0.1 P", "+odown master mymaster 127.0.0.1 P #quorum 1/1"]


# -- the command line ----------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xspec", "sentinel", *args], capture_output=True, text=True,
                          timeout=30)


@pytest.mark.parametrize(("args", "message"), [
    (["--monitor", "m 127.0.0.1 6379"], "expected 'NAME HOST PORT QUORUM'"),
    (["--monitor", "m localhost 6379 1"], "HOST must be an IP address"),
    (["--monitor", "m 127.0.0.1 6379 0"], "QUORUM at least 1"),
    (["--down-after-ms", "0"], "--down-after-ms"),
])
def test_bad_arguments_get_one_line(args: list[str], message: str):
    result = _cli(*args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_a_busy_port_gets_one_line():
    with SentinelThread(port=0) as ours:
        result = _cli("--port", str(ours.port))
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1 and f"cannot listen on 127.0.0.1:{ours.port}" in lines[0]


def test_empty_sentinel_answers_without_masters():
    with SentinelThread(port=0) as ours:
        c = RespConnection("127.0.0.1", ours.port)
        assert c.call([b"SENTINEL", b"masters"]) == Array(())
        assert c.call([b"SENTINEL", b"get-master-addr-by-name", b"x"]) == NullArray()
        assert isinstance(c.call([b"SENTINEL", b"master", b"x"]), Error)
        assert c.call([b"ROLE"]) == Array((Bulk(b"sentinel"), Array(())))
        assert b"sentinel_masters:0" in c.call([b"INFO", b"sentinel"]).value  # type: ignore[union-attr]

