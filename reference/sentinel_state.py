"""What a Sentinel knows of the deployments it monitors, and its failover state machine (spec/rules/sentinel.md).

Redis 7.0's Sentinel, restated: instances (a monitored primary, its replicas, the other Sentinels) with
their link timings and the fields their INFO reports; subjective and objective down; the leader vote; the
failover from the election to the switch of the monitored address; the hello messages that let Sentinels
find each other and adopt a newer configuration.

The state never reads a clock: every method takes ``now`` in milliseconds. It never touches the network
either: the caller (``reference/sentinel_server.py``) reports what happened on the links (a reply to PING
or INFO, a hello, a vote, a link going down) and carries out the :class:`Request` objects that
:meth:`Sentinel.tick` returns. Events go to the ``publish`` callback as ``(channel, message)``.
"""

from __future__ import annotations

import enum
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from xspec.spec.glob import pattern_matches

# Periods and limits (ms), as Redis 7.0's sentinel.c fixes them (SENTINEL-TIMING).
INFO_PERIOD = 10_000
PING_PERIOD = 1_000
ASK_PERIOD = 1_000
PUBLISH_PERIOD = 2_000
SLAVE_RECONF_TIMEOUT = 10_000
ELECTION_TIMEOUT = 10_000
MAX_DESYNC = 1_000
DEFAULT_DOWN_AFTER = 30_000
DEFAULT_FAILOVER_TIMEOUT = 180_000
DEFAULT_PARALLEL_SYNCS = 1
MAX_PENDING_COMMANDS = 100
HELLO_CHANNEL = "__sentinel__:hello"


class Flag(enum.IntFlag):
    MASTER = 1 << 0
    SLAVE = 1 << 1
    SENTINEL = 1 << 2
    S_DOWN = 1 << 3
    O_DOWN = 1 << 4
    MASTER_DOWN = 1 << 5
    FAILOVER_IN_PROGRESS = 1 << 6
    PROMOTED = 1 << 7
    RECONF_SENT = 1 << 8
    RECONF_INPROG = 1 << 9
    RECONF_DONE = 1 << 10
    FORCE_FAILOVER = 1 << 11


# The order SENTINEL MASTER lists the flags in (SENTINEL-REPLY-3); "disconnected" comes from the link.
FLAG_NAMES: tuple[tuple[Flag | None, str], ...] = (
    (Flag.S_DOWN, "s_down"), (Flag.O_DOWN, "o_down"), (Flag.MASTER, "master"), (Flag.SLAVE, "slave"),
    (Flag.SENTINEL, "sentinel"), (None, "disconnected"), (Flag.MASTER_DOWN, "master_down"),
    (Flag.FAILOVER_IN_PROGRESS, "failover_in_progress"), (Flag.PROMOTED, "promoted"),
    (Flag.RECONF_SENT, "reconf_sent"), (Flag.RECONF_INPROG, "reconf_inprog"), (Flag.RECONF_DONE, "reconf_done"),
    (Flag.FORCE_FAILOVER, "force_failover"))


class FailoverState(enum.IntEnum):
    NONE = 0
    WAIT_START = 1
    SELECT_SLAVE = 2
    SEND_SLAVEOF_NOONE = 3
    WAIT_PROMOTION = 4
    RECONF_SLAVES = 5
    UPDATE_CONFIG = 6


# How SENTINEL MASTER names a failover's state ("wait_start", "select_slave", …).
FAILOVER_STATE_NAMES = {state: state.name.lower() for state in FailoverState}


@dataclass
class Link:
    """The connections to one instance: their state and the times the down checks read."""

    connected: bool = False
    act_ping_time: int = 0  # when the oldest unanswered PING was sent (0: none outstanding)
    last_ping_time: int = 0
    last_pong_time: int = 0  # any reply to PING
    last_avail_time: int = 0  # an acceptable reply to PING (PONG, LOADING, MASTERDOWN)
    last_reconnect_time: int = 0
    pending_commands: int = 0


@dataclass
class Instance:
    """A primary, a replica or another Sentinel, as this Sentinel sees it."""

    flags: Flag
    name: str
    host: str
    port: int
    master: Master | None = None
    runid: str | None = None
    link: Link = field(default_factory=Link)
    down_after: int = DEFAULT_DOWN_AFTER
    s_down_since: int = 0
    o_down_since: int = 0
    # From INFO (primaries and replicas).
    info: str | None = None
    info_refresh: int = 0
    role_reported: Flag = Flag.MASTER
    role_reported_time: int = 0
    master_link_down_time: int = 0
    slave_master_host: str | None = None
    slave_master_port: int = 0
    slave_master_link_up: bool = False
    slave_conf_change_time: int = 0
    slave_priority: int = 100
    slave_repl_offset: int = 0
    replica_announced: int = 1
    slave_reconf_sent_time: int = 0
    last_pub_time: int = 0
    # Other Sentinels.
    last_hello_time: int = 0
    last_master_down_reply_time: int = 0
    leader: str | None = None
    leader_epoch: int = 0

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def type_name(self) -> str:
        if self.flags & Flag.MASTER:
            return "master"
        return "slave" if self.flags & Flag.SLAVE else "sentinel"

    def flag_names(self) -> str:
        names = [name for flag, name in FLAG_NAMES
                 if (flag is None and not self.link.connected) or (flag is not None and self.flags & flag)]
        return ",".join(names)

    def no_down_for(self, ms: int, now: int) -> bool:
        most_recent = max(self.s_down_since, self.o_down_since)
        return most_recent == 0 or now - most_recent > ms


@dataclass
class Master(Instance):
    """A monitored primary under its configured name, with what hangs off it."""

    quorum: int = 1
    failover_timeout: int = DEFAULT_FAILOVER_TIMEOUT
    parallel_syncs: int = DEFAULT_PARALLEL_SYNCS
    config_epoch: int = 0
    failover_epoch: int = 0
    failover_state: FailoverState = FailoverState.NONE
    failover_state_change_time: int = 0
    failover_start_time: int = 0
    promoted: Instance | None = None
    slaves: dict[tuple[str, int], Instance] = field(default_factory=dict)
    sentinels: dict[tuple[str, int], Instance] = field(default_factory=dict)

    def current_address(self) -> tuple[str, int]:
        """What GET-MASTER-ADDR-BY-NAME answers: the promoted replica once it acknowledged (SENTINEL-CMD-3)."""
        if (self.flags & Flag.FAILOVER_IN_PROGRESS and self.promoted is not None
                and self.failover_state >= FailoverState.RECONF_SLAVES):
            return self.promoted.address
        return self.address


# -- what the network layer is asked to do --------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A command for one instance's command connection; the reply comes back to ``on_reply``."""

    target: Instance
    argv: tuple[str, ...]
    purpose: str  # "ping" | "info" | "hello" | "ask" | "discard"


@dataclass
class Sentinel:
    """One Sentinel: its id, its epoch and its monitored primaries."""

    publish: Callable[[str, str], None]
    my_id: str = field(default_factory=lambda: secrets.token_hex(20))
    announce_host: str = "127.0.0.1"
    announce_port: int = 26379
    current_epoch: int = 0
    masters: dict[str, Master] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)

    # -- events ---------------------------------------------------------------------------------------

    def event(self, channel: str, ri: Instance | None, text: str = "", *, describe: bool = True) -> None:
        """Publish an event: ``<type> <name> <ip> <port>`` (and ``@ <master> <ip> <port>``) then ``text``
        (SENTINEL-EVENT-1)."""
        message = ""
        if ri is not None and describe:
            message = f"{ri.type_name()} {ri.name} {ri.host} {ri.port}"
            if not ri.flags & Flag.MASTER and ri.master is not None:
                m = ri.master
                message += f" @ {m.name} {m.host} {m.port}"
            if text:
                message += " " + text
        else:
            message = text
        self.publish(channel, message)

    # -- configuration --------------------------------------------------------------------------------

    def monitor(self, name: str, host: str, port: int, quorum: int, now: int) -> Master:
        """Start monitoring a primary (SENTINEL-CMD-9); the caller checks the arguments."""
        master = Master(flags=Flag.MASTER, name=name, host=host, port=port, quorum=quorum)
        self._fresh_link(master, now)
        self.masters[name] = master
        self.event("+monitor", master, f"quorum {quorum}")
        return master

    @staticmethod
    def _fresh_link(ri: Instance, now: int) -> None:
        ri.link = Link(act_ping_time=now, last_avail_time=now, last_pong_time=now)
        ri.role_reported_time = now

    def _add_slave(self, master: Master, host: str, port: int, now: int) -> Instance:
        slave = Instance(flags=Flag.SLAVE, name=f"{host}:{port}", host=host, port=port, master=master,
                         down_after=master.down_after)
        self._fresh_link(slave, now)
        slave.role_reported = Flag.SLAVE
        master.slaves[slave.address] = slave
        return slave

    def reset(self, master: Master, now: int, *, keep_sentinels: bool, event: bool) -> None:
        """Forget the replicas (and the Sentinels, unless kept), the failover and the links (SENTINEL-RESET-1)."""
        master.slaves = {}
        if not keep_sentinels:
            master.sentinels = {}
        master.flags &= Flag.MASTER
        master.leader = None
        master.failover_state = FailoverState.NONE
        master.failover_state_change_time = 0
        master.failover_start_time = 0
        master.promoted = None
        master.runid = None
        master.slave_master_host = None
        self._fresh_link(master, now)
        master.role_reported = Flag.MASTER
        if event:
            self.event("+reset-master", master)

    def reset_matching(self, pattern: str, now: int) -> int:
        """SENTINEL RESET: how many primaries the glob-style pattern named (SENTINEL-RESET-2)."""
        names = [m for name, m in self.masters.items() if pattern_matches(pattern.encode(), name.encode())]
        for m in names:
            self.reset(m, now, keep_sentinels=False, event=True)
        return len(names)

    def switch_master(self, master: Master, host: str, port: int, now: int) -> None:
        """Monitor the primary at a new address; the old address and the replicas become its replicas
        (SENTINEL-SWITCH-1)."""
        new = (host, port)
        kept = [s.address for s in master.slaves.values() if s.address != new]
        if new != master.address:
            kept.append(master.address)
        self.reset(master, now, keep_sentinels=True, event=False)
        master.host, master.port = host, port
        master.o_down_since = master.s_down_since = 0
        for h, p in kept:
            self.event("+slave", self._add_slave(master, h, p, now))

    # -- what the links report ------------------------------------------------------------------------

    def on_connected(self, ri: Instance, now: int) -> None:
        """Both connections are open (only the command one for a Sentinel)."""
        ri.link.connected = True

    def on_disconnected(self, ri: Instance, now: int) -> None:
        """A connection closed: the instance is disconnected until it is open again (SENTINEL-LINK-1)."""
        ri.link.connected = False

    def on_ping_reply(self, ri: Instance, reply: str, now: int) -> None:
        """A reply to PING: PONG, LOADING and MASTERDOWN count as available (SENTINEL-DOWN-1)."""
        ri.link.pending_commands = max(0, ri.link.pending_commands - 1)
        if reply.startswith(("PONG", "LOADING", "MASTERDOWN")):
            ri.link.last_avail_time = now
            ri.link.act_ping_time = 0
        ri.link.last_pong_time = now

    def on_hello_published(self, ri: Instance, ok: bool, now: int) -> None:
        ri.link.pending_commands = max(0, ri.link.pending_commands - 1)
        if ok:
            ri.last_pub_time = now

    def on_discarded_reply(self, ri: Instance) -> None:
        ri.link.pending_commands = max(0, ri.link.pending_commands - 1)

    def on_info(self, ri: Instance, info: str, now: int) -> list[Request]:
        """Read an INFO reply of a primary or replica, then act on it (SENTINEL-INFO-1 … 8)."""
        ri.link.pending_commands = max(0, ri.link.pending_commands - 1)
        requests: list[Request] = []
        ri.info = info
        ri.master_link_down_time = 0
        role: Flag | None = None
        for line in info.split("\r\n"):
            if line.startswith("run_id:") and len(line) >= 47:
                runid = line[7:47]
                if ri.runid is None:
                    ri.runid = runid
                elif ri.runid != runid:
                    self.event("+reboot", ri)  # SENTINEL-INFO-2
                    ri.runid = runid
            if (ri.flags & Flag.MASTER and isinstance(ri, Master) and line.startswith("slave")
                    and len(line) > 5 and line[5].isdigit()):
                addr = _replica_address(line)
                if addr is not None and addr not in ri.slaves:  # SENTINEL-INFO-3
                    self.event("+slave", self._add_slave(ri, addr[0], addr[1], now))
            if line.startswith("master_link_down_since_seconds:"):
                ri.master_link_down_time = _int(line.split(":", 1)[1]) * 1000
            if line.startswith("role:master"):
                role = Flag.MASTER
            elif line.startswith("role:slave"):
                role = Flag.SLAVE
            if role == Flag.SLAVE:
                key, _, value = line.partition(":")
                if key == "master_host" and (ri.slave_master_host is None
                                             or value.lower() != ri.slave_master_host.lower()):
                    ri.slave_master_host = value
                    ri.slave_conf_change_time = now
                elif key == "master_port" and _int(value) != ri.slave_master_port:
                    ri.slave_master_port = _int(value)
                    ri.slave_conf_change_time = now
                elif key == "master_link_status":
                    ri.slave_master_link_up = value.lower() == "up"
                elif key == "slave_priority":
                    ri.slave_priority = _int(value)
                elif key == "slave_repl_offset":
                    ri.slave_repl_offset = _int(value)
                elif key == "replica_announced":
                    ri.replica_announced = _int(value)
        ri.info_refresh = now
        if role is not None and role != ri.role_reported:  # SENTINEL-INFO-4
            ri.role_reported_time = now
            ri.role_reported = role
            if role == Flag.SLAVE:
                ri.slave_conf_change_time = now
            coherent = (ri.flags & (Flag.MASTER | Flag.SLAVE)) == role
            self.event("+role-change" if coherent else "-role-change", ri,
                       f"new reported role is {'master' if role == Flag.MASTER else 'slave'}")
        master = ri.master
        if ri.flags & Flag.SLAVE and role == Flag.MASTER and master is not None:
            if (ri.flags & Flag.PROMOTED and master.flags & Flag.FAILOVER_IN_PROGRESS
                    and master.failover_state == FailoverState.WAIT_PROMOTION):
                # SENTINEL-FAILOVER-6: the chosen replica now says master.
                master.config_epoch = master.failover_epoch
                master.failover_state = FailoverState.RECONF_SLAVES
                master.failover_state_change_time = now
                self.event("+promoted-slave", ri)
                self.event("+failover-state-reconf-slaves", master)
                self._force_hello(master)
            else:
                wait = PUBLISH_PERIOD * 4  # SENTINEL-INFO-5: a replica turned primary on its own
                if (not ri.flags & Flag.PROMOTED and self._looks_sane(master, now)
                        and ri.no_down_for(wait, now) and now - ri.role_reported_time > wait):
                    requests += self._slaveof(ri, master.address)
                    self.event("+convert-to-slave", ri)
        if (ri.flags & Flag.SLAVE and role == Flag.SLAVE and master is not None
                and (ri.slave_master_port != master.port or not _same_host(master.host, ri.slave_master_host))):
            wait = master.failover_timeout  # SENTINEL-INFO-6: replicating from another address
            if self._looks_sane(master, now) and ri.no_down_for(wait, now) and now - ri.slave_conf_change_time > wait:
                requests += self._slaveof(ri, master.address)
                self.event("+fix-slave-config", ri)
        if (ri.flags & Flag.SLAVE and role == Flag.SLAVE and master is not None
                and ri.flags & (Flag.RECONF_SENT | Flag.RECONF_INPROG)):
            promoted = master.promoted
            if (ri.flags & Flag.RECONF_SENT and promoted is not None and ri.slave_master_host is not None
                    and _same_host(promoted.host, ri.slave_master_host) and ri.slave_master_port == promoted.port):
                ri.flags = (ri.flags & ~Flag.RECONF_SENT) | Flag.RECONF_INPROG  # SENTINEL-INFO-7
                self.event("+slave-reconf-inprog", ri)
            if ri.flags & Flag.RECONF_INPROG and ri.slave_master_link_up:
                ri.flags = (ri.flags & ~Flag.RECONF_INPROG) | Flag.RECONF_DONE  # SENTINEL-INFO-8
                self.event("+slave-reconf-done", ri)
        return requests

    def on_is_master_down_reply(self, ri: Instance, down: int, leader: str, leader_epoch: int, now: int) -> None:
        """Another Sentinel's answer to IS-MASTER-DOWN-BY-ADDR: its view and its vote (SENTINEL-VOTE-3)."""
        ri.link.pending_commands = max(0, ri.link.pending_commands - 1)
        ri.last_master_down_reply_time = now
        if down == 1:
            ri.flags |= Flag.MASTER_DOWN
        else:
            ri.flags &= ~Flag.MASTER_DOWN
        if leader != "*":
            ri.leader = leader
            ri.leader_epoch = leader_epoch

    def on_hello(self, payload: str, now: int) -> None:
        """A hello message, from an instance's hello channel or a PUBLISH to this Sentinel (SENTINEL-HELLO-2)."""
        tokens = payload.split(",")
        if len(tokens) != 8:
            return
        host, port_text, runid, epoch_text, name, master_host, master_port_text, config_epoch_text = tokens
        master = self.masters.get(name)
        if master is None or runid == self.my_id:
            return
        port, master_port = _int(port_text), _int(master_port_text)
        si = master.sentinels.get((host, port))
        if si is not None and si.runid != runid:
            si = None
        if si is None:
            removed = [a for a, s in master.sentinels.items() if s.runid == runid]
            for a in removed:
                del master.sentinels[a]
            if removed:
                self.event("+sentinel-address-switch", master, f"ip {host} port {port} for {runid}")
            else:
                other = master.sentinels.get((host, port))
                if other is not None:
                    self.event("+sentinel-invalid-addr", other)
                    for m in self.masters.values():
                        for a in [a for a, s in m.sentinels.items() if s.runid == other.runid]:
                            del m.sentinels[a]
            si = Instance(flags=Flag.SENTINEL, name=runid, host=host, port=port, master=master,
                          down_after=master.down_after, runid=runid)
            self._fresh_link(si, now)
            master.sentinels[si.address] = si
            if not removed:
                self.event("+sentinel", si)
        epoch = _int(epoch_text)
        if epoch > self.current_epoch:
            self.current_epoch = epoch
            self.event("+new-epoch", master, str(epoch), describe=False)
        config_epoch = _int(config_epoch_text)
        if master.config_epoch < config_epoch:  # SENTINEL-HELLO-3: a newer configuration wins
            master.config_epoch = config_epoch
            if (master_host, master_port) != master.address:
                self.event("+config-update-from", si)
                self.event("+switch-master", None,
                           f"{master.name} {master.host} {master.port} {master_host} {master_port}")
                self.switch_master(master, master_host, master_port, now)
        si.last_hello_time = now

    # -- the timer ------------------------------------------------------------------------------------

    def tick(self, now: int) -> list[Request]:
        """One run of the Sentinel timer over every primary, its replicas and Sentinels (SENTINEL-TIMER-1)."""
        requests: list[Request] = []
        switch: Master | None = None
        for master in list(self.masters.values()):
            requests += self._handle(master, now)
            for ri in list(master.slaves.values()) + list(master.sentinels.values()):
                requests += self._handle(ri, now)
            if master.failover_state == FailoverState.UPDATE_CONFIG:
                switch = master
        if switch is not None:  # SENTINEL-FAILOVER-9
            new = switch.promoted or switch
            self.event("+switch-master", None,
                       f"{switch.name} {switch.host} {switch.port} {new.host} {new.port}")
            self.switch_master(switch, new.host, new.port, now)
        return requests

    def _handle(self, ri: Instance, now: int) -> list[Request]:
        requests = self._periodic(ri, now)
        self._check_subjectively_down(ri, now)
        if isinstance(ri, Master):
            self._check_objectively_down(ri, now)
            forced = self._start_failover_if_needed(ri, now)
            if forced:
                requests += self._ask_other_sentinels(ri, now, forced=True)
            requests += self._failover_state_machine(ri, now)
            requests += self._ask_other_sentinels(ri, now, forced=False)
        return requests

    def _periodic(self, ri: Instance, now: int) -> list[Request]:
        """PING, INFO and the hello message, each on its period (SENTINEL-TIMER-2)."""
        if not ri.link.connected or ri.link.pending_commands >= MAX_PENDING_COMMANDS:
            return []
        requests: list[Request] = []
        master = ri.master
        if (ri.flags & Flag.SLAVE and master is not None
                and (master.flags & (Flag.O_DOWN | Flag.FAILOVER_IN_PROGRESS) or ri.master_link_down_time != 0)):
            info_period = 1000
        else:
            info_period = INFO_PERIOD
        ping_period = min(ri.down_after, PING_PERIOD)
        if not ri.flags & Flag.SENTINEL and (ri.info_refresh == 0 or now - ri.info_refresh > info_period):
            requests.append(Request(ri, ("INFO",), "info"))
            ri.link.pending_commands += 1
        if now - ri.link.last_pong_time > ping_period and now - ri.link.last_ping_time > ping_period // 2:
            requests.append(Request(ri, ("PING",), "ping"))
            ri.link.pending_commands += 1
            ri.link.last_ping_time = now
            if ri.link.act_ping_time == 0:
                ri.link.act_ping_time = now
        if now - ri.last_pub_time > PUBLISH_PERIOD:
            requests.append(self._hello(ri))
            ri.link.pending_commands += 1
        return requests

    def _hello(self, ri: Instance) -> Request:
        master = ri if isinstance(ri, Master) else ri.master
        assert master is not None
        host, port = master.current_address()
        payload = (f"{self.announce_host},{self.announce_port},{self.my_id},{self.current_epoch},"
                   f"{master.name},{host},{port},{master.config_epoch}")
        return Request(ri, ("PUBLISH", HELLO_CHANNEL, payload), "hello")

    @staticmethod
    def _force_hello(master: Master) -> None:
        for ri in [master, *master.slaves.values(), *master.sentinels.values()]:
            ri.last_pub_time -= PUBLISH_PERIOD + 1

    def _check_subjectively_down(self, ri: Instance, now: int) -> None:
        """SDOWN: no acceptable PING reply for down-after, or a primary reporting replica for long
        (SENTINEL-DOWN-2)."""
        if ri.link.act_ping_time:
            elapsed = now - ri.link.act_ping_time
        elif not ri.link.connected:
            elapsed = now - ri.link.last_avail_time
        else:
            elapsed = 0
        down = elapsed > ri.down_after or (
            bool(ri.flags & Flag.MASTER) and ri.role_reported == Flag.SLAVE
            and now - ri.role_reported_time > ri.down_after + INFO_PERIOD * 2)
        if down:
            if not ri.flags & Flag.S_DOWN:
                self.event("+sdown", ri)
                ri.s_down_since = now
                ri.flags |= Flag.S_DOWN
        elif ri.flags & Flag.S_DOWN:
            self.event("-sdown", ri)
            ri.flags &= ~Flag.S_DOWN

    def _check_objectively_down(self, master: Master, now: int) -> None:
        """ODOWN: SDOWN here and for enough other Sentinels to reach the quorum (SENTINEL-DOWN-3)."""
        quorum = 0
        if master.flags & Flag.S_DOWN:
            quorum = 1 + sum(1 for s in master.sentinels.values() if s.flags & Flag.MASTER_DOWN)
        if master.flags & Flag.S_DOWN and quorum >= master.quorum:
            if not master.flags & Flag.O_DOWN:
                self.event("+odown", master, f"#quorum {quorum}/{master.quorum}")
                master.flags |= Flag.O_DOWN
                master.o_down_since = now
        elif master.flags & Flag.O_DOWN:
            self.event("-odown", master)
            master.flags &= ~Flag.O_DOWN

    def _start_failover_if_needed(self, master: Master, now: int) -> bool:
        """SENTINEL-FAILOVER-1: ODOWN, none in progress, none started within twice failover-timeout."""
        if not master.flags & Flag.O_DOWN or master.flags & Flag.FAILOVER_IN_PROGRESS:
            return False
        if now - master.failover_start_time < master.failover_timeout * 2:
            return False
        self.start_failover(master, now)
        return True

    def start_failover(self, master: Master, now: int) -> None:
        master.failover_state = FailoverState.WAIT_START
        master.flags |= Flag.FAILOVER_IN_PROGRESS
        self.current_epoch += 1
        master.failover_epoch = self.current_epoch
        self.event("+new-epoch", master, str(self.current_epoch), describe=False)
        self.event("+try-failover", master)
        master.failover_start_time = now + self.rng.randrange(MAX_DESYNC)
        master.failover_state_change_time = now

    def _ask_other_sentinels(self, master: Master, now: int, *, forced: bool) -> list[Request]:
        """IS-MASTER-DOWN-BY-ADDR to the other Sentinels while SDOWN; stale answers expire (SENTINEL-VOTE-2)."""
        requests: list[Request] = []
        for si in master.sentinels.values():
            if now - si.last_master_down_reply_time > ASK_PERIOD * 5:
                si.flags &= ~Flag.MASTER_DOWN
                si.leader = None
            if not master.flags & Flag.S_DOWN or not si.link.connected:
                continue
            if not forced and now - si.last_master_down_reply_time < ASK_PERIOD:
                continue
            runid = self.my_id if master.failover_state > FailoverState.NONE else "*"
            requests.append(Request(si, ("SENTINEL", "is-master-down-by-addr", master.host, str(master.port),
                                         str(self.current_epoch), runid), "ask"))
            si.link.pending_commands += 1
        return requests

    def vote(self, master: Master, epoch: int, runid: str, now: int) -> tuple[str | None, int]:
        """Vote once per epoch, for the first asker (SENTINEL-VOTE-1); returns (leader, leader epoch)."""
        if epoch > self.current_epoch:
            self.current_epoch = epoch
            self.event("+new-epoch", master, str(epoch), describe=False)
        if master.leader_epoch < epoch and self.current_epoch <= epoch:
            master.leader = runid
            master.leader_epoch = self.current_epoch
            self.event("+vote-for-leader", master, f"{runid} {master.leader_epoch}", describe=False)
            if runid != self.my_id:
                master.failover_start_time = now + self.rng.randrange(MAX_DESYNC)
        return master.leader, master.leader_epoch

    def _leader(self, master: Master, epoch: int, now: int) -> str | None:
        """The leader for ``epoch``: a majority of the known Sentinels and at least the quorum (SENTINEL-VOTE-4)."""
        votes: dict[str, int] = {}
        for si in master.sentinels.values():
            if si.leader is not None and si.leader_epoch == self.current_epoch:
                votes[si.leader] = votes.get(si.leader, 0) + 1
        winner, most = None, 0
        for runid, n in votes.items():
            if n > most:
                winner, most = runid, n
        mine, mine_epoch = self.vote(master, epoch, winner if winner is not None else self.my_id, now)
        if mine is not None and mine_epoch == epoch:
            votes[mine] = votes.get(mine, 0) + 1
            if votes[mine] > most:
                winner, most = mine, votes[mine]
        voters = len(master.sentinels) + 1
        if winner is not None and (most < voters // 2 + 1 or most < master.quorum):
            return None
        return winner

    def select_slave(self, master: Master, now: int) -> Instance | None:
        """The replica to promote: usable ones by priority, then offset, then run id (SENTINEL-SELECT-1, 2)."""
        max_down = (now - master.s_down_since if master.flags & Flag.S_DOWN else 0) + master.down_after * 10
        validity = PING_PERIOD * 5 if master.flags & Flag.S_DOWN else INFO_PERIOD * 3
        usable = [s for s in master.slaves.values()
                  if not s.flags & (Flag.S_DOWN | Flag.O_DOWN) and s.link.connected
                  and now - s.link.last_avail_time <= PING_PERIOD * 5 and s.slave_priority != 0
                  and now - s.info_refresh <= validity and s.master_link_down_time <= max_down]
        if not usable:
            return None
        # A missing run id sorts after every other; run ids compare case-insensitively.
        return min(usable, key=lambda s: (s.slave_priority, -s.slave_repl_offset, s.runid is None,
                                          (s.runid or "").lower()))

    def _failover_state_machine(self, master: Master, now: int) -> list[Request]:
        if not master.flags & Flag.FAILOVER_IN_PROGRESS:
            return []
        state = master.failover_state
        if state == FailoverState.WAIT_START:
            self._failover_wait_start(master, now)
        elif state == FailoverState.SELECT_SLAVE:
            self._failover_select_slave(master, now)
        elif state == FailoverState.SEND_SLAVEOF_NOONE:
            return self._failover_send_slaveof_noone(master, now)
        elif state == FailoverState.WAIT_PROMOTION:
            if now - master.failover_state_change_time > master.failover_timeout:
                self.event("-failover-abort-slave-timeout", master)  # SENTINEL-FAILOVER-5
                self.abort_failover(master, now)
        elif state == FailoverState.RECONF_SLAVES:
            return self._failover_reconf_next_slave(master, now)
        return []

    def _failover_wait_start(self, master: Master, now: int) -> None:
        """SENTINEL-FAILOVER-2: continue once elected (or forced), abort after the election timeout."""
        leader = self._leader(master, master.failover_epoch, now)
        if leader != self.my_id and not master.flags & Flag.FORCE_FAILOVER:
            if now - master.failover_start_time > min(ELECTION_TIMEOUT, master.failover_timeout):
                self.event("-failover-abort-not-elected", master)
                self.abort_failover(master, now)
            return
        self.event("+elected-leader", master)
        master.failover_state = FailoverState.SELECT_SLAVE
        master.failover_state_change_time = now
        self.event("+failover-state-select-slave", master)

    def _failover_select_slave(self, master: Master, now: int) -> None:
        """SENTINEL-FAILOVER-3."""
        slave = self.select_slave(master, now)
        if slave is None:
            self.event("-failover-abort-no-good-slave", master)
            self.abort_failover(master, now)
            return
        self.event("+selected-slave", slave)
        slave.flags |= Flag.PROMOTED
        master.promoted = slave
        master.failover_state = FailoverState.SEND_SLAVEOF_NOONE
        master.failover_state_change_time = now
        self.event("+failover-state-send-slaveof-noone", slave)

    def _failover_send_slaveof_noone(self, master: Master, now: int) -> list[Request]:
        """SENTINEL-FAILOVER-4: REPLICAOF NO ONE once the chosen replica's link is up."""
        promoted = master.promoted
        assert promoted is not None
        if not promoted.link.connected:
            if now - master.failover_state_change_time > master.failover_timeout:
                self.event("-failover-abort-slave-timeout", master)
                self.abort_failover(master, now)
            return []
        requests = self._slaveof(promoted, None)
        self.event("+failover-state-wait-promotion", promoted)
        master.failover_state = FailoverState.WAIT_PROMOTION
        master.failover_state_change_time = now
        return requests

    def _failover_reconf_next_slave(self, master: Master, now: int) -> list[Request]:
        """SENTINEL-FAILOVER-7: repoint the other replicas, parallel-syncs at a time."""
        promoted = master.promoted
        assert promoted is not None
        requests: list[Request] = []
        in_progress = sum(1 for s in master.slaves.values() if s.flags & (Flag.RECONF_SENT | Flag.RECONF_INPROG))
        for slave in master.slaves.values():
            if in_progress >= master.parallel_syncs:
                break
            if slave.flags & (Flag.PROMOTED | Flag.RECONF_DONE):
                continue
            if slave.flags & Flag.RECONF_SENT and now - slave.slave_reconf_sent_time > SLAVE_RECONF_TIMEOUT:
                self.event("-slave-reconf-sent-timeout", slave)
                slave.flags = (slave.flags & ~Flag.RECONF_SENT) | Flag.RECONF_DONE
            if slave.flags & (Flag.RECONF_SENT | Flag.RECONF_INPROG) or not slave.link.connected:
                continue
            requests += self._slaveof(slave, promoted.address)
            slave.flags |= Flag.RECONF_SENT
            slave.slave_reconf_sent_time = now
            self.event("+slave-reconf-sent", slave)
            in_progress += 1
        return requests + self._failover_detect_end(master, now)

    def _failover_detect_end(self, master: Master, now: int) -> list[Request]:
        """SENTINEL-FAILOVER-8: the end once every reachable replica is repointed, or on timeout."""
        promoted = master.promoted
        if promoted is None or promoted.flags & Flag.S_DOWN:
            return []
        waiting = sum(1 for s in master.slaves.values()
                      if not s.flags & (Flag.PROMOTED | Flag.RECONF_DONE) and not s.flags & Flag.S_DOWN)
        timeout = now - master.failover_state_change_time > master.failover_timeout
        if timeout:
            waiting = 0
            self.event("+failover-end-for-timeout", master)
        if waiting == 0:
            self.event("+failover-end", master)
            master.failover_state = FailoverState.UPDATE_CONFIG
            master.failover_state_change_time = now
        requests: list[Request] = []
        if timeout:
            for slave in master.slaves.values():
                if slave.flags & (Flag.PROMOTED | Flag.RECONF_DONE | Flag.RECONF_SENT) or not slave.link.connected:
                    continue
                requests += self._slaveof(slave, promoted.address)
                self.event("+slave-reconf-sent-be", slave)
                slave.flags |= Flag.RECONF_SENT
        return requests

    def abort_failover(self, master: Master, now: int) -> None:
        master.flags &= ~(Flag.FAILOVER_IN_PROGRESS | Flag.FORCE_FAILOVER)
        master.failover_state = FailoverState.NONE
        master.failover_state_change_time = now
        if master.promoted is not None:
            master.promoted.flags &= ~Flag.PROMOTED
            master.promoted = None

    @staticmethod
    def _looks_sane(master: Master, now: int) -> bool:
        return (bool(master.flags & Flag.MASTER) and master.role_reported == Flag.MASTER
                and not master.flags & (Flag.S_DOWN | Flag.O_DOWN) and now - master.info_refresh < INFO_PERIOD * 2)

    @staticmethod
    def _slaveof(ri: Instance, address: tuple[str, int] | None) -> list[Request]:
        """REPLICAOF in a transaction with CONFIG REWRITE and the two CLIENT KILLs (SENTINEL-SLAVEOF-1)."""
        host, port = address if address is not None else ("NO", "ONE")
        ri.link.pending_commands += 6
        return [Request(ri, argv, "discard") for argv in (
            ("MULTI",), ("SLAVEOF", host, str(port)), ("CONFIG", "REWRITE"), ("CLIENT", "KILL", "TYPE", "normal"),
            ("CLIENT", "KILL", "TYPE", "pubsub"), ("EXEC",))]

    def quorum_reachable(self, master: Master) -> tuple[int, bool, bool]:
        """(usable Sentinels, quorum reachable, majority reachable) for CKQUORUM (SENTINEL-CMD-11)."""
        usable = 1 + sum(1 for s in master.sentinels.values() if not s.flags & (Flag.S_DOWN | Flag.O_DOWN))
        voters = len(master.sentinels) + 1
        return usable, usable >= master.quorum, usable >= voters // 2 + 1


def _int(text: str) -> int:
    """``atoi``'s reading: the leading decimal digits (with a sign), 0 when there are none."""
    text = text.strip()
    end = 1 if text[:1] in ("-", "+") else 0
    while end < len(text) and text[end].isdigit():
        end += 1
    try:
        return int(text[:end])
    except ValueError:
        return 0


def _replica_address(line: str) -> tuple[str, int] | None:
    """The address in an INFO ``slaveN:`` line, old (``ip,port,state``) or new (``ip=…,port=…``) form."""
    value = line.split(":", 1)[1] if ":" in line else ""
    if "ip=" not in line:
        parts = value.split(",")
        return (parts[0], _int(parts[1])) if len(parts) >= 3 else None
    fields = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
    if "ip" not in fields or "port" not in fields:
        return None
    return fields["ip"], _int(fields["port"])


def _same_host(host: str, other: str | None) -> bool:
    return other is not None and host.lower() == other.lower()
