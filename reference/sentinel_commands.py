"""The commands a Sentinel answers its clients (spec/rules/sentinel.md, SENTINEL-CMD-*), as Redis 7.0 does.

``SENTINEL`` and its subcommands, ``INFO``, ``ROLE``, ``PING``, ``HELLO``, ``AUTH``, ``CLIENT``, ``PUBLISH``
(hello messages only), the subscribe family and ``SHUTDOWN``. Replies are ``xspec.spec.resp`` values; the
caller (``reference/sentinel_server.py``) encodes them for the client's protocol and keeps its subscriptions.
"""

from __future__ import annotations

import ipaddress
import os
import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xspec.reference.clock import Clock, VirtualClock
from xspec.reference.sentinel_state import (
    ASK_PERIOD,
    DEFAULT_DOWN_AFTER,
    DEFAULT_FAILOVER_TIMEOUT,
    ELECTION_TIMEOUT,
    FAILOVER_STATE_NAMES,
    INFO_PERIOD,
    PING_PERIOD,
    PUBLISH_PERIOD,
    SLAVE_RECONF_TIMEOUT,
    Flag,
    Instance,
    Master,
    Sentinel,
)
from xspec.spec.glob import pattern_matches
from xspec.spec.resp import Array, Bulk, Error, Int, Map, NullArray, NullBulk, Reply, Simple

if TYPE_CHECKING:
    from collections.abc import Callable

SENTINEL_VERSION = "7.0.15"

HELP_LINES = (
    "CKQUORUM <master-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a master and the majority needed to authorize the",
    "    failover.",
    "CONFIG SET <param> <value>",
    "    Set a global Sentinel configuration parameter.",
    "CONFIG GET <param>",
    "    Get global Sentinel configuration parameter.",
    "DEBUG [<param> <value> ...]",
    "    Show a list of configurable time parameters and their values (milliseconds).",
    "    Or update current configurable parameters values (one or more).",
    "GET-MASTER-ADDR-BY-NAME <master-name>",
    "    Return the ip and port number of the master with that name.",
    "FAILOVER <master-name>",
    "    Manually failover a master node without asking for agreement from other",
    "    Sentinels",
    "FLUSHCONFIG",
    "    Force Sentinel to rewrite its configuration on disk, including the current",
    "    Sentinel state.",
    "INFO-CACHE <master-name>",
    "    Return last cached INFO output from masters and all its replicas.",
    "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
    "    Check if the master specified by ip:port is down from current Sentinel's",
    "    point of view.",
    "MASTER <master-name>",
    "    Show the state and info of the specified master.",
    "MASTERS",
    "    Show a list of monitored masters and their state.",
    "MONITOR <name> <ip> <port> <quorum>",
    "    Start monitoring a new master with the specified name, ip, port and quorum.",
    "MYID",
    "    Return the ID of the Sentinel instance.",
    "PENDING-SCRIPTS",
    "    Get pending scripts information.",
    "REMOVE <master-name>",
    "    Remove master from Sentinel's monitor list.",
    "REPLICAS <master-name>",
    "    Show a list of replicas for this master and their state.",
    "RESET <pattern>",
    "    Reset masters for specific master name matching this pattern.",
    "SENTINELS <master-name>",
    "    Show a list of Sentinel instances for this master and their state.",
    "SET <master-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain masters.",
    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
    "    Simulate a Sentinel crash.",
)

# Each subcommand's arity as the 7.0 command table gives it (negative: at least).
SUBCOMMAND_ARITY = {
    "ckquorum": 3, "config": -3, "debug": -2, "failover": 3, "flushconfig": 2, "get-master-addr-by-name": 3,
    "help": 2, "info-cache": -3, "is-master-down-by-addr": 6, "master": 3, "masters": 2, "monitor": 6,
    "myid": 2, "pending-scripts": 2, "remove": 3, "replicas": 3, "reset": 3, "sentinels": 3, "set": -5,
    "simulate-failure": -3, "slaves": 3,
}

# The command table of a Sentinel: name -> arity (SENTINEL-CMD-1).
COMMAND_ARITY = {
    "ping": -1, "sentinel": -2, "info": -1, "role": 1, "hello": -1, "auth": -2, "client": -2, "publish": 3,
    "subscribe": -2, "psubscribe": -2, "unsubscribe": -1, "punsubscribe": -1, "shutdown": -1,
    "xspec.clock": -2,
}

# What a client in RESP2 subscriber mode may still send (SENTINEL-CMD-2).
SUBSCRIBER_COMMANDS = frozenset({"subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ping", "reset", "quit"})


@dataclass
class Session:
    """One client connection's state."""

    client_id: int
    proto: int = 2
    name: str | None = None
    channels: set[bytes] = field(default_factory=set)
    patterns: set[bytes] = field(default_factory=set)
    close_after_reply: bool = False

    @property
    def subscribed(self) -> bool:
        return bool(self.channels or self.patterns)


@dataclass
class Context:
    """What the commands read and change besides the Sentinel's state."""

    sentinel: Sentinel
    clock: Clock
    now: Callable[[], int]
    port: int
    started_ms: int
    run_id: str
    clients: Callable[[], int]
    shutdown: Callable[[], None]
    subscribe: Callable[[Session, bytes, bool], Reply]
    unsubscribe: Callable[[Session, list[bytes], bool], list[Reply]]


def _err_arity(name: str) -> Error:
    return Error(f"ERR wrong number of arguments for '{name}' command")


def _arity_ok(arity: int, argc: int) -> bool:
    return argc == arity if arity > 0 else argc >= -arity


def execute(ctx: Context, session: Session, argv: list[bytes]) -> list[Reply]:
    """Run one client command; the replies it sends (several for a subscribe to several channels)."""
    name = argv[0].decode(errors="replace").lower()
    if name == "quit":
        session.close_after_reply = True
        return [Simple("OK")]
    arity = COMMAND_ARITY.get(name)
    if arity is None:
        args = " ".join(f"'{a.decode(errors='replace')[:128]}'" for a in argv[1:])
        return [Error(f"ERR unknown command '{argv[0].decode(errors='replace')[:128]}', "
                      f"with args beginning with: {args}" + (" " if args else ""))]
    if not _arity_ok(arity, len(argv)):
        return [_err_arity(name)]
    if session.subscribed and session.proto == 2 and name not in SUBSCRIBER_COMMANDS:
        sub = argv[1].decode(errors="replace").lower() if len(argv) > 1 else ""
        if (name == "sentinel" and sub in SUBCOMMAND_ARITY) or (name == "client" and sub.encode() in CLIENT_ARITY):
            name = f"{name}|{sub}"  # a subcommand is named by its full name
        return [Error(f"ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                      "are allowed in this context")]
    if name == "ping":
        return [_ping(session, argv)]
    if name == "sentinel":
        return [_sentinel(ctx, argv)]
    if name == "info":
        return [Bulk(info_text(ctx, [a.decode(errors="replace").lower() for a in argv[1:]]).encode())]
    if name == "role":
        return [Array((Bulk(b"sentinel"), Array(tuple(Bulk(m.encode()) for m in ctx.sentinel.masters))))]
    if name == "hello":
        return [_hello(ctx, session, argv)]
    if name == "auth":
        return [Error("ERR AUTH <password> called without any password configured for the default user. "
                      "Are you sure your configuration is correct?")]
    if name == "client":
        return [_client(session, argv)]
    if name == "publish":
        if argv[1] != b"__sentinel__:hello":
            return [Error("ERR Only HELLO messages are accepted by Sentinel instances.")]
        ctx.sentinel.on_hello(argv[2].decode(errors="replace"), ctx.now())
        return [Int(1)]
    if name in ("subscribe", "psubscribe"):
        return [ctx.subscribe(session, channel, name == "psubscribe") for channel in argv[1:]]
    if name in ("unsubscribe", "punsubscribe"):
        return ctx.unsubscribe(session, argv[1:], name == "punsubscribe")
    if name == "xspec.clock":
        return [_xspec_clock(ctx, argv)]
    if name == "shutdown":
        if any(a.lower() not in (b"nosave", b"save", b"now", b"force") for a in argv[1:]):
            return [Error("ERR syntax error")]
        ctx.shutdown()
        session.close_after_reply = True
        return []
    raise AssertionError(name)


def _ping(session: Session, argv: list[bytes]) -> Reply:
    if len(argv) > 2:
        return _err_arity("ping")
    if session.subscribed and session.proto == 2:
        return Array((Bulk(b"pong"), Bulk(argv[1] if len(argv) == 2 else b"")))
    return Bulk(argv[1]) if len(argv) == 2 else Simple("PONG")


def _xspec_clock(ctx: Context, argv: list[bytes]) -> Reply:
    """xspec's own XSPEC.CLOCK GET | SET ms | ADVANCE ms, as ``xspec serve`` answers it (SENTINEL-CMD-14)."""
    sub = argv[1].lower()
    if sub == b"get" and len(argv) == 2:
        return Int(ctx.now())
    if sub in (b"set", b"advance") and len(argv) == 3:
        if not isinstance(ctx.clock, VirtualClock):
            return Error("ERR XSPEC.CLOCK SET and ADVANCE need a server started with --clock virtual")
        try:
            ms = int(argv[2])
        except ValueError:
            return Error("ERR value is not an integer or out of range")
        target = ms if sub == b"set" else ctx.now() + ms
        if not 0 <= target <= 2**63 - 1:
            return Error("ERR the clock must stay between 0 and 9223372036854775807 ms")
        ctx.clock.set(target)
        return Int(target)
    return Error(f"ERR unknown subcommand or wrong number of arguments for '{argv[1].decode(errors='replace')}'. "
                 "Try XSPEC.CLOCK GET | SET <ms> | ADVANCE <ms>.")


def _hello(ctx: Context, session: Session, argv: list[bytes]) -> Reply:
    if len(argv) >= 2:
        try:
            proto = int(argv[1])
        except ValueError:
            return Error("ERR Protocol version is not an integer or out of range")
        if proto not in (2, 3):
            return Error("NOPROTO unsupported protocol version")
        i = 2
        while i < len(argv):
            option = argv[i].lower()
            if option == b"setname" and i + 1 < len(argv):
                session.name = argv[i + 1].decode(errors="replace")
                i += 2
            elif option == b"auth" and i + 2 < len(argv):
                return Error("WRONGPASS invalid username-password pair or user is disabled.")
            else:
                return Error(f"ERR Syntax error in HELLO option '{argv[i].decode(errors='replace')}'")
        session.proto = proto
    return Map(((Bulk(b"server"), Bulk(b"redis")), (Bulk(b"version"), Bulk(SENTINEL_VERSION.encode())),
                (Bulk(b"proto"), Int(session.proto)), (Bulk(b"id"), Int(session.client_id)),
                (Bulk(b"mode"), Bulk(b"sentinel")), (Bulk(b"role"), Bulk(b"master")),
                (Bulk(b"modules"), Array(()))))


CLIENT_ARITY = {b"setname": 3, b"getname": 2, b"id": 2}


def _client(session: Session, argv: list[bytes]) -> Reply:
    sub = argv[1].lower()
    if sub not in CLIENT_ARITY:
        return Error(f"ERR unknown subcommand '{argv[1].decode(errors='replace')[:128]}'. Try CLIENT HELP.")
    if len(argv) != CLIENT_ARITY[sub]:
        return _err_arity(f"client|{sub.decode()}")
    if sub == b"setname":
        if any(b <= 32 or b > 126 for b in argv[2]):
            return Error("ERR Client names cannot contain spaces, newlines or special characters.")
        session.name = argv[2].decode() or None
        return Simple("OK")
    if sub == b"getname":
        return Bulk(session.name.encode()) if session.name else NullBulk()
    return Int(session.client_id)


# -- SENTINEL ---------------------------------------------------------------------------------------------


def _sentinel(ctx: Context, argv: list[bytes]) -> Reply:
    sub = argv[1].decode(errors="replace").lower()
    arity = SUBCOMMAND_ARITY.get(sub)
    if arity is None:
        return Error(f"ERR unknown subcommand '{argv[1].decode(errors='replace')[:128]}'. Try SENTINEL HELP.")
    if not _arity_ok(arity, len(argv)):
        return _err_arity(f"sentinel|{sub}")
    s = ctx.sentinel
    now = ctx.now()
    args = [a.decode(errors="replace") for a in argv[2:]]
    if sub == "help":
        lines = ("SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *HELP_LINES,
                 "HELP", "    Prints this help.")
        return Array(tuple(Simple(line) for line in lines))
    if sub == "masters":
        return Array(tuple(instance_reply(m, now) for m in s.masters.values()))
    if sub == "myid":
        return Bulk(s.my_id.encode())
    if sub == "get-master-addr-by-name":
        master = s.masters.get(args[0])
        if master is None:
            return NullArray()
        host, port = master.current_address()
        return Array((Bulk(host.encode()), Bulk(str(port).encode())))
    if sub == "is-master-down-by-addr":
        return _is_master_down(ctx, args, now)
    if sub == "reset":
        return Int(s.reset_matching(args[0], now))
    if sub == "monitor":
        return _monitor(ctx, args, now)
    if sub == "pending-scripts":
        return Array(())
    if sub == "flushconfig":
        return Simple("OK")
    if sub == "info-cache":
        return _info_cache(s, args, now)
    if sub == "config":
        return _config(args)
    if sub == "debug":
        if args:
            return Error("ERR SENTINEL DEBUG with parameters is not supported by xspec sentinel")
        return Array(tuple(Bulk(str(x).encode()) for pair in DEBUG_PARAMETERS for x in pair))
    if sub == "simulate-failure":
        if [a.lower() for a in args] == ["help"]:
            return Array((Bulk(b"crash-after-election"), Bulk(b"crash-after-promotion")))
        return Error("ERR SENTINEL SIMULATE-FAILURE is not supported by xspec sentinel")
    master = s.masters.get(args[0])
    if master is None:
        return Error("ERR No such master with that name")
    if sub == "master":
        return instance_reply(master, now)
    if sub in ("replicas", "slaves"):
        return Array(tuple(instance_reply(r, now) for r in master.slaves.values() if r.replica_announced))
    if sub == "sentinels":
        return Array(tuple(instance_reply(r, now) for r in master.sentinels.values()))
    if sub == "failover":  # SENTINEL-CMD-5
        if master.flags & Flag.FAILOVER_IN_PROGRESS:
            return Error("INPROG Failover already in progress")
        if s.select_slave(master, now) is None:
            return Error("NOGOODSLAVE No suitable replica to promote")
        s.start_failover(master, now)
        master.flags |= Flag.FORCE_FAILOVER
        return Simple("OK")
    if sub == "remove":
        s.event("-monitor", master)
        del s.masters[master.name]
        return Simple("OK")
    if sub == "ckquorum":  # SENTINEL-CMD-11
        usable, quorum_ok, majority_ok = s.quorum_reachable(master)
        if quorum_ok and majority_ok:
            return Simple(f"OK {usable} usable Sentinels. Quorum and failover authorization can be reached")
        text = f"NOQUORUM {usable} usable Sentinels. "
        if not quorum_ok:
            text += "Not enough available Sentinels to reach the specified quorum for this master"
        if not majority_ok:
            if not quorum_ok:
                text += ". "
            text += "Not enough available Sentinels to reach the majority and authorize a failover"
        return Error(text)
    if sub == "set":
        return _set(master, args[1:])
    raise AssertionError(sub)


# SENTINEL DEBUG's timing parameters (SENTINEL-TIMING); xspec sentinel runs with Redis's defaults.
DEBUG_PARAMETERS = (
    ("INFO-PERIOD", INFO_PERIOD), ("PING-PERIOD", PING_PERIOD), ("ASK-PERIOD", ASK_PERIOD),
    ("PUBLISH-PERIOD", PUBLISH_PERIOD), ("DEFAULT-DOWN-AFTER", DEFAULT_DOWN_AFTER),
    ("DEFAULT-FAILOVER-TIMEOUT", DEFAULT_FAILOVER_TIMEOUT), ("TILT-TRIGGER", 2000), ("TILT-PERIOD", 30000),
    ("SLAVE-RECONF-TIMEOUT", SLAVE_RECONF_TIMEOUT), ("MIN-LINK-RECONNECT-PERIOD", 15000),
    ("ELECTION-TIMEOUT", ELECTION_TIMEOUT), ("SCRIPT-MAX-RUNTIME", 60000), ("SCRIPT-RETRY-DELAY", 30000))

# SENTINEL CONFIG GET's global parameters and the values xspec sentinel runs with.
CONFIG_PARAMETERS = (("resolve-hostnames", "no"), ("announce-hostnames", "no"), ("announce-ip", ""),
                     ("announce-port", "0"), ("sentinel-user", ""), ("sentinel-pass", ""))


def _config(args: list[str]) -> Reply:
    """SENTINEL CONFIG GET (glob over the global parameters); SET is refused (SENTINEL-CMD-13)."""
    if len(args) == 2 and args[0].lower() == "get":
        pattern = args[1].encode()
        return Array(tuple(Bulk(x.encode()) for name, value in CONFIG_PARAMETERS
                           if pattern_matches(pattern, name.encode(), nocase=True) for x in (name, value)))
    if len(args) == 3 and args[0].lower() == "set":
        return Error("ERR SENTINEL CONFIG SET is not supported by xspec sentinel")
    return Error("ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.")


def instance_reply(ri: Instance, now: int) -> Map:
    """One instance as SENTINEL MASTER / REPLICAS / SENTINELS show it, fields in Redis's order (SENTINEL-REPLY-1)."""
    fields: list[tuple[str, str]] = [
        ("name", ri.name), ("ip", ri.host), ("port", str(ri.port)), ("runid", ri.runid or ""),
        ("flags", ri.flag_names()), ("link-pending-commands", str(ri.link.pending_commands)),
        ("link-refcount", "1")]
    if isinstance(ri, Master) and ri.flags & Flag.FAILOVER_IN_PROGRESS:
        fields.append(("failover-state", FAILOVER_STATE_NAMES[ri.failover_state]))
    fields += [("last-ping-sent", str(now - ri.link.act_ping_time if ri.link.act_ping_time else 0)),
               ("last-ok-ping-reply", str(now - ri.link.last_avail_time)),
               ("last-ping-reply", str(now - ri.link.last_pong_time))]
    if ri.flags & Flag.S_DOWN:
        fields.append(("s-down-time", str(now - ri.s_down_since)))
    if ri.flags & Flag.O_DOWN:
        fields.append(("o-down-time", str(now - ri.o_down_since)))
    fields.append(("down-after-milliseconds", str(ri.down_after)))
    if ri.flags & (Flag.MASTER | Flag.SLAVE):
        fields += [("info-refresh", str(now - ri.info_refresh if ri.info_refresh else 0)),
                   ("role-reported", "master" if ri.role_reported == Flag.MASTER else "slave"),
                   ("role-reported-time", str(now - ri.role_reported_time))]
    if isinstance(ri, Master):
        fields += [("config-epoch", str(ri.config_epoch)), ("num-slaves", str(len(ri.slaves))),
                   ("num-other-sentinels", str(len(ri.sentinels))), ("quorum", str(ri.quorum)),
                   ("failover-timeout", str(ri.failover_timeout)), ("parallel-syncs", str(ri.parallel_syncs))]
    if ri.flags & Flag.SLAVE:
        fields += [("master-link-down-time", str(ri.master_link_down_time)),
                   ("master-link-status", "ok" if ri.slave_master_link_up else "err"),
                   ("master-host", ri.slave_master_host or "?"), ("master-port", str(ri.slave_master_port)),
                   ("slave-priority", str(ri.slave_priority)), ("slave-repl-offset", str(ri.slave_repl_offset)),
                   ("replica-announced", str(ri.replica_announced))]
    if ri.flags & Flag.SENTINEL:
        fields += [("last-hello-message", str(now - ri.last_hello_time)), ("voted-leader", ri.leader or "?"),
                   ("voted-leader-epoch", str(ri.leader_epoch))]
    return Map(tuple((Bulk(k.encode()), Bulk(v.encode())) for k, v in fields))


def _is_master_down(ctx: Context, args: list[str], now: int) -> Reply:
    """SENTINEL-VOTE-1: whether this Sentinel sees the primary SDOWN, and its vote when asked for one."""
    host, port_text, epoch_text, runid = args
    try:
        port = int(port_text)
    except ValueError:
        return Error("ERR value is not an integer or out of range")
    try:
        epoch = int(epoch_text)
    except ValueError:
        return Error("ERR value is not an integer or out of range")
    s = ctx.sentinel
    master = next((m for m in s.masters.values() if m.address == (host, port)), None)
    down = int(master is not None and bool(master.flags & Flag.S_DOWN))
    leader: str | None = None
    leader_epoch = 0
    if master is not None and runid != "*":
        leader, leader_epoch = s.vote(master, epoch, runid, now)
    return Array((Int(down), Bulk((leader or "*").encode()), Int(leader_epoch)))


def _monitor(ctx: Context, args: list[str], now: int) -> Reply:
    """SENTINEL-CMD-9."""
    name, host, port_text, quorum_text = args
    try:
        quorum = int(quorum_text)
    except ValueError:
        return Error("ERR Invalid quorum")
    try:
        port = int(port_text)
    except ValueError:
        return Error("ERR Invalid port")
    if quorum <= 0:
        return Error("ERR Quorum must be 1 or greater.")
    if not _is_ip(host):
        return Error("ERR Invalid IP address or hostname specified")
    if not 0 < port < 65536:
        return Error("ERR Invalid port number.")
    if name in ctx.sentinel.masters:
        return Error("ERR Duplicate master name.")
    ctx.sentinel.monitor(name, host, port, quorum, now)
    return Simple("OK")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _set(master: Master, args: list[str]) -> Reply:
    """SENTINEL SET for the timing and quorum options (SENTINEL-CMD-12)."""
    if len(args) % 2:
        return Error(f"ERR Unknown option or number of arguments for SENTINEL SET '{args[-1]}'")
    numeric = {"down-after-milliseconds", "failover-timeout", "parallel-syncs", "quorum"}
    for option, value in zip(args[::2], args[1::2], strict=True):
        key = option.lower()
        if key not in numeric:
            return Error(f"ERR Unknown option or number of arguments for SENTINEL SET '{option}'")
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number <= 0:
            return Error(f"ERR Invalid argument '{value}' for SENTINEL SET '{option}'")
        if key == "down-after-milliseconds":
            master.down_after = number
            for ri in [*master.slaves.values(), *master.sentinels.values()]:
                ri.down_after = number
        elif key == "failover-timeout":
            master.failover_timeout = number
        elif key == "parallel-syncs":
            master.parallel_syncs = number
        else:
            master.quorum = number
    return Simple("OK")


def _info_cache(s: Sentinel, names: list[str], now: int) -> Reply:
    masters = [s.masters[n] for n in dict.fromkeys(names) if n in s.masters] if names else list(s.masters.values())
    items: list[Reply] = []
    for m in masters:
        entries: list[Reply] = []
        for ri in (m, *m.slaves.values()):
            age = now - ri.info_refresh if m.info_refresh else 0
            entries.append(Array((Int(age), Bulk(ri.info.encode()) if ri.info is not None else NullArray())))
        items += [Bulk(m.name.encode()), Array(tuple(entries))]
    return Array(tuple(items))


def info_text(ctx: Context, sections: list[str]) -> str:
    """INFO on a Sentinel: server, clients, cpu, stats and sentinel (SENTINEL-CMD-8)."""
    known = ("server", "clients", "cpu", "stats", "sentinel")
    wanted = [sec for sec in sections if sec in known]
    everything = not sections or any(sec in ("all", "everything", "default") for sec in sections)
    if everything:
        wanted = list(known)
    now = ctx.now()
    parts: list[str] = []
    if "server" in wanted:
        uptime = max(0, (now - ctx.started_ms) // 1000)
        parts.append("# Server\r\n" + "".join(f"{k}:{v}\r\n" for k, v in (
            ("redis_version", SENTINEL_VERSION), ("redis_mode", "sentinel"),
            ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
            ("process_id", os.getpid()), ("run_id", ctx.run_id), ("tcp_port", ctx.port),
            ("uptime_in_seconds", uptime), ("uptime_in_days", uptime // 86400), ("executable", "xspec sentinel"))))
    if "clients" in wanted:
        parts.append(f"# Clients\r\nconnected_clients:{ctx.clients()}\r\n")
    if "cpu" in wanted:
        times = os.times()
        parts.append(f"# CPU\r\nused_cpu_sys:{times.system:.6f}\r\nused_cpu_user:{times.user:.6f}\r\n")
    if "stats" in wanted:
        parts.append("# Stats\r\n")
    if "sentinel" in wanted:
        s = ctx.sentinel
        text = ("# Sentinel\r\n" f"sentinel_masters:{len(s.masters)}\r\nsentinel_tilt:0\r\n"
                "sentinel_tilt_since_seconds:-1\r\nsentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\n"
                "sentinel_simulate_failure_flags:0\r\n")
        for i, m in enumerate(s.masters.values()):
            status = "odown" if m.flags & Flag.O_DOWN else "sdown" if m.flags & Flag.S_DOWN else "ok"
            text += (f"master{i}:name={m.name},status={status},address={m.host}:{m.port},"
                     f"slaves={len(m.slaves)},sentinels={len(m.sentinels) + 1}\r\n")
        parts.append(text)
    return "\r\n".join(parts)
