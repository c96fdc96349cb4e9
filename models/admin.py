"""Handlers of the connection and server-administration commands (spec/rules/server.md).

HELLO, AUTH, RESET, QUIT, CLIENT ID/SETNAME/GETNAME/INFO/LIST, INFO and
CONFIG GET/SET/RESETSTAT as Redis 7.0.15 answers them on a server without ACL
users or modules; the only user is ``default``, whose password is
``requirepass`` (none when it is empty).

Some replies describe the host rather than the semantics (HELLO's ``id`` and
``version``, CLIENT ID, CLIENT LIST/INFO, INFO's figures, the order of CONFIG
GET pairs). The model gives one plausible value for them and
``xspec.spec.environment`` checks the recorded reply by shape
(spec/rules/environment.md).
"""

from __future__ import annotations

from collections.abc import Callable
from errno import EINVAL, ENOENT

from xspec.models.cerrno import note_iterator_end, note_strtoull
from xspec.models.server import NUM_DATABASES, Call, CommandError, Server, command
from xspec.models.state import Client
from xspec.models.transactions import discard_transaction
from xspec.spec import commands as table
from xspec.spec.dialect import Dialect
from xspec.spec.ids import I64_MAX, U64_MAX, c_string, parse_ll, strtoull
from xspec.spec.resp import NULL_BULK, OK, Array, Bulk, Int, Map, Reply, Simple, Verbatim


# -- HELLO, AUTH, RESET, QUIT ------------------------------------------------------
def _authenticate(call: Call, username: bytes, password: bytes) -> bool:
    """``ACLAuthenticateUser`` with only the ``default`` user (AUTH-3, AUTH-4).

    Without ``requirepass`` the user has ``nopass`` and any password works;
    with it, the password must be exactly ``requirepass``. Success
    authenticates the connection; failure leaves it as it was. An unknown user
    sets errno to ENOENT, a wrong password to EINVAL (``ACLCheckUserCredentials``,
    XADD-14).
    """
    if username != b"default":
        call.server.errno = ENOENT
        return False
    if call.server.password_required() and password != call.server.config["requirepass"].encode("latin-1"):
        call.server.errno = EINVAL
        return False
    call.server.set_authenticated(call.client.id, True)
    return True


_WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


def valid_client_name(name: bytes) -> bool:
    """``validateClientName``: printable ASCII without spaces (bytes 0x21..0x7e)."""
    return all(0x21 <= b <= 0x7E for b in name)


_BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."


def set_client_name(c: Client, name: bytes) -> None:
    if not valid_client_name(name):  # CLIENT-3
        raise CommandError(_BAD_CLIENT_NAME)
    c.name = name or None  # CLIENT-4: the empty name clears it


@command("hello")
def hello(call: Call) -> Reply:
    argv = call.argv
    c = call.client
    version = 0
    i = 1
    if len(argv) >= 2:
        parsed = parse_ll(argv[1])
        if parsed is None:  # HELLO-1
            raise CommandError("ERR Protocol version is not an integer or out of range")
        if parsed < 2 or parsed > 3:  # HELLO-2
            raise CommandError("NOPROTO unsupported protocol version")
        version = parsed
        i = 2
    dialect = call.server.dialect
    # HELLO-DIALECT-2: Valkey parses every option first, then authenticates, then names
    deferred = dialect.hello_options_then_auth
    credentials: tuple[bytes, bytes] | None = None
    name: bytes | None = None
    while i < len(argv):  # HELLO-3: each option is checked and applied in turn, left to right
        opt = c_string(argv[i]).lower()
        more = len(argv) - 1 - i
        if opt == b"auth" and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])
            if not deferred and not _authenticate(call, *credentials):  # HELLO-4
                raise CommandError(_WRONGPASS)
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            if deferred:
                if not valid_client_name(name):  # HELLO-DIALECT-2: checked here, set at the end
                    raise CommandError(_BAD_CLIENT_NAME)
            else:
                set_client_name(c, name)  # HELLO-5: kept even if a later option fails
            i += 2
        else:  # HELLO-3
            raise CommandError(f"ERR Syntax error in HELLO option '{c_string(argv[i]).decode('latin-1')}'")
    if deferred and credentials is not None and not _authenticate(call, *credentials):  # HELLO-DIALECT-2
        raise CommandError(_WRONGPASS)
    if c.id in call.server.unauthenticated:  # HELLO-8
        raise CommandError(f"NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                           f"{dialect.hello_auth_form} option can be used to authenticate the client and select "
                           f"the RESP protocol version at the same time")
    if deferred and name is not None:
        set_client_name(c, name)  # HELLO-DIALECT-2
    if version:  # HELLO-6: the reply is already in the new protocol
        c.proto = version
    modules: tuple[Reply, ...] = ()
    if dialect.lua_module:  # HELLO-DIALECT-1: Valkey lists its Lua scripting engine as a module
        modules = (Map(((Bulk(b"name"), Bulk(b"lua")), (Bulk(b"ver"), Int(1)), (Bulk(b"path"), Bulk(b"lua")),
                        (Bulk(b"args"), Array(())))),)
    return Map((  # HELLO-7; HELLO-DIALECT-1: the server's own name
        (Bulk(b"server"), Bulk(dialect.server_name.encode())),
        (Bulk(b"version"), Bulk(dialect.version.encode())),
        (Bulk(b"proto"), Int(c.proto)),
        (Bulk(b"id"), Int(c.id)),
        (Bulk(b"mode"), Bulk(b"standalone")),
        (Bulk(b"role"), Bulk(b"master")),
        (Bulk(b"modules"), Array(modules)),
    ))


@command("auth")
def auth(call: Call) -> Reply:
    argv = call.argv
    if len(argv) > 3:  # AUTH-1
        raise CommandError(table.SYNTAX)
    if len(argv) == 2 and not call.server.password_required():  # AUTH-2: the default user has no password
        raise CommandError("ERR AUTH <password> called without any password configured for the default user. "
                           "Are you sure your configuration is correct?")
    username, password = (b"default", argv[1]) if len(argv) == 2 else (argv[1], argv[2])
    if not _authenticate(call, username, password):  # AUTH-3
        raise CommandError(_WRONGPASS)
    return OK  # AUTH-3


@command("reset")
def reset(call: Call) -> Reply:
    """CONN-4: back to a new connection's state, keeping the client ID."""
    c = call.client
    c.db = 0  # RESET-1
    c.proto = 2
    discard_transaction(c)
    c.name = None
    # RESET-3: back to the default user, who must authenticate if it has a password
    call.server.set_authenticated(c.id, not call.server.password_required())
    return Simple("RESET")  # RESET-2: rendered in RESP2, the protocol just restored


@command("quit")
def quit_(call: Call) -> Reply:
    call.client.closed = True  # QUIT-1: the dispatcher closes the connection after the reply
    return OK


# -- CLIENT --------------------------------------------------------------------------
@command("client|id")
def client_id(call: Call) -> Reply:
    return Int(call.client.id)  # CLIENT-1


@command("client|getname")
def client_getname(call: Call) -> Reply:
    name = call.client.name
    return NULL_BULK if name is None else Bulk(name)  # CLIENT-2


@command("client|setname")
def client_setname(call: Call) -> Reply:
    set_client_name(call.client, call.argv[2])
    return OK


def client_flags(c: Client) -> str:
    """The ``flags=`` letters of CLIENT LIST, in Redis's order (CLIENT-6)."""
    letters = ""
    if c.in_multi:
        letters += "x"
    if c.blocked is not None:
        letters += "b"
    if c.dirty_cas:
        letters += "d"
    return letters or "N"


def client_info_line(c: Client, dialect: Dialect | None = None) -> str:
    """One CLIENT LIST line. Figures about the connection itself are placeholders (ENV-CLIENT-LIST).

    A ``dialect`` with its own field names formats the line its way (CLIENT-DIALECT-1):
    6.2's ``cmd=`` names the container only, Valkey's ``multi=`` stays 0 once MULTI was used.
    """
    name = (c.name or b"").decode("latin-1")
    multi = len(c.multi_queue) if c.in_multi else -1
    if dialect is not None and dialect.client_list_fields:
        fields = dialect.client_list_fields
        subcommand_names = dialect.subcommand_table
        if dialect.client_multi_kept and c.multi_used and not c.in_multi:
            multi = 0
        known = {"id": str(c.id), "addr": "127.0.0.1:0", "laddr": "127.0.0.1:0", "name": name,
                 "flags": client_flags(c), "capa": "", "db": str(c.db), "multi": str(multi),
                 "watch": str(len(c.watched)), "events": "r", "user": "default", "redir": "-1",
                 "resp": str(c.proto), "lib-name": "", "lib-ver": "",
                 "cmd": c.last_cmd if subcommand_names else c.last_cmd.split("|")[0]}
        return " ".join(f"{f}={known.get(f, '0')}" for f in fields)
    return (f"id={c.id} addr=127.0.0.1:0 laddr=127.0.0.1:0 fd=0 name={name} age=0 idle=0 "
            f"flags={client_flags(c)} db={c.db} sub=0 psub=0 ssub=0 multi={multi} qbuf=0 qbuf-free=0 "
            f"argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
            f"cmd={c.last_cmd} user=default redir=-1 resp={c.proto}")


def _text(s: str) -> Verbatim:
    # addReplyVerbatim: RESP3 verbatim "txt", a bulk string in RESP2
    return Verbatim("txt", s.encode("latin-1"))


@command("client|info")
def client_info(call: Call) -> Reply:
    return _text(client_info_line(call.client, call.server.dialect) + "\n")  # CLIENT-5


_CLIENT_TYPES = {b"normal", b"slave", b"replica", b"pubsub", b"master"}


@command("client|list")
def client_list(call: Call) -> Reply:
    argv = call.argv
    clients = list(call.server.clients.values())  # CLIENT-7: in connection order
    if len(argv) == 4 and c_string(argv[2]).lower() == b"type":
        kind = c_string(argv[3]).lower()
        if kind not in _CLIENT_TYPES:  # CLIENT-8
            raise CommandError(f"ERR Unknown client type '{c_string(argv[3]).decode('latin-1')}'")
        # CLIENT-8: every modelled connection is a normal client
        chosen = clients if kind == b"normal" else []
    elif len(argv) > 3 and c_string(argv[2]).lower() == b"id":
        chosen = []
        for arg in argv[3:]:  # CLIENT-9: in argument order, unknown IDs skipped
            cid = parse_ll(arg)
            if cid is None:
                raise CommandError("ERR Invalid client ID")
            found = call.server.clients.get(cid)
            if found is not None:
                chosen.append(found)
    elif len(argv) != 2:  # CLIENT-10
        raise CommandError(table.SYNTAX)
    else:
        chosen = clients
    return _text("".join(client_info_line(c, call.server.dialect) + "\n" for c in chosen))


# -- INFO ----------------------------------------------------------------------------
# The fields of each fixed section of INFO in Redis 7.0.15 (standalone, no
# modules, no replicas), in order. Their values describe the host.
INFO_FIELDS: dict[str, list[str]] = {name: text.split() for name, text in {
    "Server": """
        redis_version redis_git_sha1 redis_git_dirty redis_build_id redis_mode os arch_bits monotonic_clock
        multiplexing_api atomicvar_api gcc_version process_id process_supervised run_id tcp_port server_time_usec
        uptime_in_seconds uptime_in_days hz configured_hz lru_clock executable config_file io_threads_active""",
    "Clients": """
        connected_clients cluster_connections maxclients client_recent_max_input_buffer client_recent_max_output_buffer blocked_clients tracking_clients clients_in_timeout_table""",
    "Memory": """
        used_memory used_memory_human used_memory_rss used_memory_rss_human used_memory_peak used_memory_peak_human used_memory_peak_perc used_memory_overhead
        used_memory_startup used_memory_dataset used_memory_dataset_perc allocator_allocated allocator_active allocator_resident total_system_memory total_system_memory_human
        used_memory_lua used_memory_vm_eval used_memory_lua_human used_memory_scripts_eval number_of_cached_scripts number_of_functions number_of_libraries used_memory_vm_functions
        used_memory_vm_total used_memory_vm_total_human used_memory_functions used_memory_scripts used_memory_scripts_human maxmemory maxmemory_human maxmemory_policy
        allocator_frag_ratio allocator_frag_bytes allocator_rss_ratio allocator_rss_bytes rss_overhead_ratio rss_overhead_bytes mem_fragmentation_ratio mem_fragmentation_bytes
        mem_not_counted_for_evict mem_replication_backlog mem_total_replication_buffers mem_clients_slaves mem_clients_normal mem_cluster_links mem_aof_buffer mem_allocator
        active_defrag_running lazyfree_pending_objects lazyfreed_objects""",
    "Persistence": """
        loading async_loading current_cow_peak current_cow_size current_cow_size_age current_fork_perc current_save_keys_processed current_save_keys_total
        rdb_changes_since_last_save rdb_bgsave_in_progress rdb_last_save_time rdb_last_bgsave_status rdb_last_bgsave_time_sec rdb_current_bgsave_time_sec rdb_saves rdb_last_cow_size
        rdb_last_load_keys_expired rdb_last_load_keys_loaded aof_enabled aof_rewrite_in_progress aof_rewrite_scheduled aof_last_rewrite_time_sec aof_current_rewrite_time_sec aof_last_bgrewrite_status
        aof_rewrites aof_rewrites_consecutive_failures aof_last_write_status aof_last_cow_size module_fork_in_progress module_fork_last_cow_size""",
    "Stats": """
        total_connections_received total_commands_processed instantaneous_ops_per_sec total_net_input_bytes total_net_output_bytes total_net_repl_input_bytes total_net_repl_output_bytes instantaneous_input_kbps
        instantaneous_output_kbps instantaneous_input_repl_kbps instantaneous_output_repl_kbps rejected_connections sync_full sync_partial_ok sync_partial_err expired_keys
        expired_stale_perc expired_time_cap_reached_count expire_cycle_cpu_milliseconds evicted_keys evicted_clients total_eviction_exceeded_time current_eviction_exceeded_time keyspace_hits
        keyspace_misses pubsub_channels pubsub_patterns pubsubshard_channels latest_fork_usec total_forks migrate_cached_sockets slave_expires_tracked_keys
        active_defrag_hits active_defrag_misses active_defrag_key_hits active_defrag_key_misses total_active_defrag_time current_active_defrag_time tracking_total_keys tracking_total_items
        tracking_total_prefixes unexpected_error_replies total_error_replies dump_payload_sanitizations total_reads_processed total_writes_processed io_threaded_reads_processed io_threaded_writes_processed
        reply_buffer_shrinks reply_buffer_expands""",
    "Replication": """
        role connected_slaves master_failover_state master_replid master_replid2 master_repl_offset second_repl_offset repl_backlog_active
        repl_backlog_size repl_backlog_first_byte_offset repl_backlog_histlen""",
    "CPU": """
        used_cpu_sys used_cpu_user used_cpu_sys_children used_cpu_user_children used_cpu_sys_main_thread used_cpu_user_main_thread""",
    "Modules": """
""",
    "Cluster": """
        cluster_enabled""",
}.items()}

_DEFAULT_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                     "modules", "errorstats", "cluster", "keyspace")
_ALL_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                 "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace")
_SECTION_TITLES = {s: "CPU" if s == "cpu" else s.capitalize() for s in _ALL_SECTIONS}


InfoLayout = tuple[tuple[str, ...], dict[str, str], dict[str, list[str]]]
_INFO_LAYOUTS: dict[str, InfoLayout] = {}


def info_layout(server: Server) -> InfoLayout:
    """Section names in order, their titles, and each title's fields, for the dialect (INFO-DIALECT-1)."""
    text = server.dialect.info_layout
    if text is None:
        return _ALL_SECTIONS, _SECTION_TITLES, INFO_FIELDS
    layout = _INFO_LAYOUTS.get(text)
    if layout is None:
        titles: dict[str, str] = {}
        fields: dict[str, list[str]] = {}
        for line in text.strip().splitlines():
            if line.startswith("# "):
                title = line[2:]
                titles[title.lower()] = title
                fields[title] = []
            else:
                fields[title].extend(line.split())
        layout = _INFO_LAYOUTS[text] = (tuple(titles), titles, fields)
    return layout


def info_sections(argv: list[bytes], all_sections: tuple[str, ...] = _ALL_SECTIONS) -> list[str]:
    """``genInfoSectionDict``: the sections INFO prints, in Redis's fixed order (INFO-1)."""
    wanted: set[str] = set()
    if len(argv) == 1:
        wanted.update(_DEFAULT_SECTIONS)
    for arg in argv[1:]:
        name = c_string(arg).decode("latin-1").lower()
        if name == "default":
            wanted.update(_DEFAULT_SECTIONS)
        elif name in ("all", "everything"):
            wanted.update(all_sections)
        else:
            wanted.add(name)
    return [s for s in all_sections if s in wanted]


def _info_values(server: Server) -> dict[str, str]:
    """The fields whose value the model knows; every other field prints 0."""
    return {
        "redis_version": server.dialect.version,
        "redis_mode": "standalone",
        "connected_clients": str(len(server.clients)),
        "blocked_clients": str(len(server.blocked_clients())),
        "maxmemory_policy": "noeviction",
        "role": "master",
        "connected_slaves": "0",
        "cluster_enabled": "0",
        **server.dialect.info_values,  # INFO-DIALECT-1
    }


def info_text(server: Server, sections: list[str]) -> str:
    values = _info_values(server)
    _, titles, fields = info_layout(server)
    parts = []
    for section in sections:
        lines = [f"# {titles[section]}"]
        if section == "keyspace":  # INFO-3
            for dbid in range(NUM_DATABASES):
                if server.dbs[dbid]:
                    lines.append(f"db{dbid}:keys={len(server.dbs[dbid])},expires=0,avg_ttl=0")
        else:
            lines.extend(f"{f}:{values.get(f, '0')}" for f in fields.get(titles[section], []))
        parts.append("".join(line + "\r\n" for line in lines))
    return "\r\n".join(parts)  # INFO-2: sections are separated by an empty line


@command("info")
def info(call: Call) -> Reply:
    if len(call.argv) > 2 and not call.server.dialect.info_multiple_sections:  # INFO-DIALECT-2
        raise CommandError(table.SYNTAX)
    sections = info_sections(call.argv, info_layout(call.server)[0])
    if "errorstats" in sections:
        note_iterator_end(call)  # XADD-14: the walk over the error-count tree ends off it
    return _text(info_text(call.server, sections))


# -- CONFIG --------------------------------------------------------------------------
# Every parameter CONFIG GET * lists on Redis 7.0.15 with its default value.
# Values left empty here describe the host or how the server was started
# (port, dir, logfile ...); ENV-CONFIG checks them by name only.
_CONFIG_DEFAULTS_TEXT = """
acl-pubsub-default resetchannels
aclfile
acllog-max-len 128
active-defrag-cycle-max 25
active-defrag-cycle-min 1
active-defrag-ignore-bytes 104857600
active-defrag-max-scan-fields 1000
active-defrag-threshold-lower 10
active-defrag-threshold-upper 100
active-expire-effort 1
activedefrag no
activerehashing yes
always-show-logo no
aof-disable-auto-gc no
aof-load-truncated yes
aof-rewrite-incremental-fsync yes
aof-timestamp-enabled no
aof-use-rdb-preamble yes
aof_rewrite_cpulist
appenddirname
appendfilename
appendfsync everysec
appendonly
auto-aof-rewrite-min-size 67108864
auto-aof-rewrite-percentage 100
bgsave_cpulist
bind
bind-source-addr
bio_cpulist
busy-reply-threshold 5000
client-output-buffer-limit normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60
client-query-buffer-limit 1073741824
cluster-allow-pubsubshard-when-down yes
cluster-allow-reads-when-down no
cluster-allow-replica-migration yes
cluster-announce-bus-port 0
cluster-announce-hostname
cluster-announce-ip
cluster-announce-port 0
cluster-announce-tls-port 0
cluster-config-file nodes.conf
cluster-enabled no
cluster-link-sendbuf-limit 0
cluster-migration-barrier 1
cluster-node-timeout 15000
cluster-port 0
cluster-preferred-endpoint-type ip
cluster-replica-no-failover no
cluster-replica-validity-factor 10
cluster-require-full-coverage yes
cluster-slave-no-failover no
cluster-slave-validity-factor 10
crash-log-enabled yes
crash-memcheck-enabled yes
daemonize
databases 16
dbfilename
dir
disable-thp yes
dynamic-hz yes
enable-debug-command no
enable-module-command no
enable-protected-configs no
hash-max-listpack-entries 512
hash-max-listpack-value 64
hash-max-ziplist-entries 512
hash-max-ziplist-value 64
hll-sparse-max-bytes 3000
hz 10
ignore-warnings
io-threads 1
io-threads-do-reads no
jemalloc-bg-thread yes
latency-monitor-threshold 0
latency-tracking yes
latency-tracking-info-percentiles 50 99 99.9
lazyfree-lazy-eviction no
lazyfree-lazy-expire no
lazyfree-lazy-server-del no
lazyfree-lazy-user-del no
lazyfree-lazy-user-flush no
lfu-decay-time 1
lfu-log-factor 10
list-compress-depth 0
list-max-listpack-size -2
list-max-ziplist-size -2
logfile
loglevel notice
lua-time-limit 5000
masterauth
masteruser
maxclients
maxmemory 0
maxmemory-clients 0
maxmemory-eviction-tenacity 10
maxmemory-policy noeviction
maxmemory-samples 5
min-replicas-max-lag 10
min-replicas-to-write 0
min-slaves-max-lag 10
min-slaves-to-write 0
no-appendfsync-on-rewrite no
notify-keyspace-events
oom-score-adj no
oom-score-adj-values 0 200 800
pidfile
port
proc-title-template {title} {listen-addr} {server-mode}
propagation-error-behavior ignore
protected-mode yes
proto-max-bulk-len 536870912
rdb-del-sync-files no
rdb-save-incremental-fsync yes
rdbchecksum yes
rdbcompression yes
repl-backlog-size 1048576
repl-backlog-ttl 3600
repl-disable-tcp-nodelay no
repl-diskless-load disabled
repl-diskless-sync yes
repl-diskless-sync-delay 5
repl-diskless-sync-max-replicas 0
repl-ping-replica-period 10
repl-ping-slave-period 10
repl-timeout 60
replica-announce-ip
replica-announce-port 0
replica-announced yes
replica-ignore-disk-write-errors no
replica-ignore-maxmemory yes
replica-lazy-flush no
replica-priority 100
replica-read-only yes
replica-serve-stale-data yes
replicaof
requirepass
sanitize-dump-payload no
save
server_cpulist
set-max-intset-entries 512
set-proc-title yes
shutdown-on-sigint default
shutdown-on-sigterm default
shutdown-timeout 10
slave-announce-ip
slave-announce-port 0
slave-ignore-maxmemory yes
slave-lazy-flush no
slave-priority 100
slave-read-only yes
slave-serve-stale-data yes
slaveof
slowlog-log-slower-than 10000
slowlog-max-len 128
socket-mark-id 0
stop-writes-on-bgsave-error yes
stream-node-max-bytes 4096
stream-node-max-entries 100
supervised
syslog-enabled no
syslog-facility local0
syslog-ident redis
tcp-backlog 511
tcp-keepalive 300
timeout 0
tls-auth-clients yes
tls-ca-cert-dir
tls-ca-cert-file
tls-cert-file
tls-ciphers
tls-ciphersuites
tls-client-cert-file
tls-client-key-file
tls-client-key-file-pass
tls-cluster no
tls-dh-params-file
tls-key-file
tls-key-file-pass
tls-port 0
tls-prefer-server-ciphers no
tls-protocols
tls-replication no
tls-session-cache-size 20480
tls-session-cache-timeout 300
tls-session-caching yes
tracking-table-max-keys 1000000
unixsocket
unixsocketperm
zset-max-listpack-entries 128
zset-max-listpack-value 64
zset-max-ziplist-entries 128
zset-max-ziplist-value 64
"""
CONFIG_DEFAULTS: dict[str, str] = {
    line.split(" ", 1)[0]: line.split(" ", 1)[1] if " " in line else ""
    for line in _CONFIG_DEFAULTS_TEXT.strip().splitlines()
}
# The parameters the model can change with CONFIG SET.
_SETTABLE = ("stream-node-max-entries", "stream-node-max-bytes", "requirepass")
_RANGE_ERROR = "argument must be between 0 and 9223372036854775807 inclusive"


def config_value(server: Server, name: str) -> str:
    return server.config.get(name, CONFIG_DEFAULTS.get(name, ""))


@command("config|get")
def config_get(call: Call) -> Reply:
    from xspec.models.generic import pattern_matches

    matches: dict[str, tuple[str, str]] = {}  # lowercased name -> (name as replied, value)
    for arg in call.argv[2:]:
        text = c_string(arg).decode("latin-1")
        # CONFIG-1: a plain name is looked up as given; CONFIG-DIALECT-2: 6.2 matches it as a pattern
        if call.server.dialect.config_get_plain_names and not any(ch in text for ch in "[*?"):
            if text.lower() in CONFIG_DEFAULTS and text.lower() not in matches:
                matches[text.lower()] = (text, config_value(call.server, text.lower()))
            continue
        for name in CONFIG_DEFAULTS:  # CONFIG-2: a pattern matches names case-insensitively
            if name not in matches and pattern_matches(c_string(arg), name.encode(), nocase=True):
                matches[name] = (name, config_value(call.server, name))
    # CONFIG-3: the pairs come in hash-table order, which the model does not
    # reproduce (ENV-CONFIG); they are given sorted by name.
    return Map(tuple((Bulk(n.encode("latin-1")), Bulk(v.encode("latin-1")))
                     for n, v in sorted(matches.values())))


def _parse_integer(value: bytes) -> int:
    v = parse_ll(value)
    if v is None:
        raise ValueError("argument couldn't be parsed into an integer")
    if v < 0:
        raise ValueError(_RANGE_ERROR)
    return v


_MEMORY_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000 ** 2, b"mb": 1024 ** 2,
                 b"g": 1000 ** 3, b"gb": 1024 ** 3}


def _parse_memory(value: bytes) -> int:
    """``memtoull`` then the 0..LONG_MAX bounds, with C's unsigned wrap-around."""
    text = c_string(value)
    if text[:1] == b"-":
        raise ValueError("argument must be a memory value")
    digits = len(text) - len(text.lstrip(b"0123456789"))
    unit = text[digits:].lower()
    if unit not in _MEMORY_UNITS:
        raise ValueError("argument must be a memory value")
    parsed = strtoull(text[:digits])
    number = U64_MAX if parsed is None else parsed[0]
    result = (number * _MEMORY_UNITS[unit]) & U64_MAX
    if result > I64_MAX:
        raise ValueError(_RANGE_ERROR)
    return result


def _parse_string(value: bytes) -> str:
    return value.decode("latin-1")


_PARSERS: dict[str, Callable[[bytes], int | str]] = {
    "stream-node-max-entries": _parse_integer, "stream-node-max-bytes": _parse_memory, "requirepass": _parse_string}


@command("config|set")
def config_set(call: Call) -> Reply:
    argv = call.argv
    if len(argv) % 2:  # CONFIG-4
        raise CommandError(table.SYNTAX)
    names = [c_string(a).decode("latin-1") for a in argv[2::2]]
    values = argv[3::2]
    seen: set[str] = set()
    legacy = not call.server.dialect.subcommand_table
    for n in names:  # CONFIG-5: the first unknown or repeated name is the error
        if n.lower() not in CONFIG_DEFAULTS:
            if legacy:  # CONFIG-DIALECT-1
                raise CommandError(f"ERR Unsupported CONFIG parameter: {n}")
            raise CommandError(f"ERR Unknown option or number of arguments for CONFIG SET - '{n}'")
        if n.lower() in seen:  # CONFIG-6
            raise CommandError(f"ERR CONFIG SET failed (possibly related to argument '{n}') - duplicate parameter")
        seen.add(n.lower())
    for n in names:
        if n.lower() not in _SETTABLE:
            raise CommandError(f"ERR xspec model: CONFIG SET {n} is not modelled")
    parsed: list[tuple[str, int | str]] = []
    for n, v in zip(names, values, strict=True):  # CONFIG-7: all or nothing
        if _PARSERS[n.lower()] is _parse_memory:
            # XADD-14: memtoull sets errno before its strtoull; 0 and ERANGE word XADD alike.
            note_strtoull(call.server, overflow=False)
        try:
            parsed.append((n.lower(), _PARSERS[n.lower()](v)))
        except ValueError as e:
            if legacy:  # CONFIG-DIALECT-1
                raise CommandError(f"ERR Invalid argument '{c_string(v).decode('latin-1')}' for CONFIG SET "
                                   f"'{n}' - {e}") from None
            raise CommandError(f"ERR CONFIG SET failed (possibly related to argument '{n}') - {e}") from None
    for name, number in parsed:
        # CONFIG-8: CONFIG GET shows the number in bytes; an empty requirepass removes the password (AUTH-4)
        call.server.config[name] = str(number)
    return OK


@command("config|resetstat")
def config_resetstat(call: Call) -> Reply:
    return OK  # CONFIG-9: the model keeps no statistics


# -- HELP ----------------------------------------------------------------------------
# The help lines of Redis 7.0.15 after the header line.
_CLIENT_HELP = """
CACHING (YES|NO)
    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.
GETREDIR
    Return the client ID we are redirecting to when tracking is enabled.
GETNAME
    Return the name of the current connection.
ID
    Return the ID of the current connection.
INFO
    Return information about the current client connection.
KILL <ip:port>
    Kill connection made from <ip:port>.
KILL <option> <value> [<option> <value> [...]]
    Kill connections. Options are:
    * ADDR (<ip:port>|<unixsocket>:0)
      Kill connections made from the specified address
    * LADDR (<ip:port>|<unixsocket>:0)
      Kill connections made to specified local address
    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)
      Kill connections by type.
    * USER <username>
      Kill connections authenticated by <username>.
    * SKIPME (YES|NO)
      Skip killing current connection (default: yes).
LIST [options ...]
    Return information about client connections. Options:
    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)
      Return clients of specified type.
UNPAUSE
    Stop the current client pause, resuming traffic.
PAUSE <timeout> [WRITE|ALL]
    Suspend all, or just write, clients for <timeout> milliseconds.
REPLY (ON|OFF|SKIP)
    Control the replies sent to the current connection.
SETNAME <name>
    Assign the name <name> to the current connection.
UNBLOCK <clientid> [TIMEOUT|ERROR]
    Unblock the specified blocked client.
TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]
         [OPTIN] [OPTOUT] [NOLOOP]
    Control server assisted client side caching.
TRACKINGINFO
    Report tracking status for the current connection.
NO-EVICT (ON|OFF)
    Protect current client connection from eviction.
HELP
    Prints this help.
"""
_CONFIG_HELP = """
GET <pattern>
    Return parameters matching the glob-like <pattern> and their values.
SET <directive> <value>
    Set the configuration <directive> to <value>.
RESETSTAT
    Reset statistics reported by the INFO command.
REWRITE
    Rewrite the configuration file.
HELP
    Prints this help.
"""


def _help(call: Call, lines: str) -> Reply:
    """``addReplyHelp``: a header naming the command as typed, in capitals, then the lines."""
    name = c_string(call.argv[0]).decode("latin-1").upper()
    header = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    body = lines.strip("\n").split("\n")
    # HELP-DIALECT-1: the closing line is the dialect's
    return Array(tuple(Simple(line) for line in [header, *body[:-1], call.server.dialect.help_last_line]))


@command("client|help")
def client_help(call: Call) -> Reply:
    return _help(call, _CLIENT_HELP)  # CLIENT-11


@command("config|help")
def config_help(call: Call) -> Reply:
    return _help(call, _CONFIG_HELP)  # CONFIG-10


@command("client|*")
@command("config|*")
def legacy_subcommand_refused(call: Call) -> Reply:
    """6.2's CLIENT and CONFIG with an unknown subcommand or a wrong count (DISPATCH-DIALECT-1)."""
    from xspec.models.info import subcommand_syntax_error
    raise subcommand_syntax_error(call)
