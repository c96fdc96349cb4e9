"""CONFIG's parameters: every name CONFIG GET lists with its default, and the units memory values take.

Shared by the model (which can change only a few of them) and the reference
server (which serves them all); a dialect's own defaults are in
``Dialect.config_defaults``.
"""

from __future__ import annotations

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

# memtoull's unit suffixes, matched case-insensitively (CONFIG SET of a memory value, CONFIG-7).
MEMORY_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000 ** 2, b"mb": 1024 ** 2,
                b"g": 1000 ** 3, b"gb": 1024 ** 3}
