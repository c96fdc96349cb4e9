"""Dialects: which server's behaviour the model reproduces.

A dialect is a named set of switches. ``redis-7.0`` is the baseline; every
other dialect is written as its differences from it, each switch named after
the behaviour it changes, read by the handlers as an attribute of this frozen
dataclass (``call.server.dialect.claims_drop_deleted``), and documented in
``spec/dialects.md`` with the rule ids it changes. A switch's default is the
7.0 behaviour, so ``REDIS_70`` sets none.

Every dialect was derived by recording the scenario corpus from its real
server and is checked against it: ``redis-6.2`` (6.2.14), ``redis-7.2``
(7.2.6), ``redis-7.4`` (7.4.1), ``valkey-8.1`` (8.1.8) and ``valkey-9.1``
(9.1.2); see spec/dialects.md, whose table of every switch per dialect is
generated from this module (``xspec.spec.dialect_table``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from xspec.spec import commands as table
from xspec.spec.config import CONFIG_DEFAULTS
from xspec.spec.config_dialects import (
    CONFIG_62,
    CONFIG_72,
    CONFIG_74,
    CONFIG_HIDDEN_70,
    CONFIG_HIDDEN_SINCE_72,
    CONFIG_VALKEY_81,
    CONFIG_VALKEY_91,
)
from xspec.spec.ids import c_string
from xspec.spec.info import (
    INFO_LAYOUT_62,
    INFO_LAYOUT_72,
    INFO_LAYOUT_74,
    INFO_LAYOUT_VALKEY_81,
    INFO_LAYOUT_VALKEY_91,
)

Lookup = Callable[[list[bytes]], "table.CommandSpec | None"]


@dataclass(frozen=True)
class Dialect:
    """The behaviour switches of one server family and version range."""

    name: str
    server: str
    version: str  # the version the dialect is exact to
    # 7.0 reads the clock afresh at every reading; 7.2+ takes one snapshot per command.
    time_snapshot_per_command: bool = False
    # A CLIENT PAUSE (or FAILOVER's) still holds at a command whose time equals its end (6.2, 7.0:
    # it is over once ``end < mstime``); 7.2+ and Valkey: over once ``end <= mstime`` (EXPIRE-PAUSE-2).
    pause_holds_at_its_end: bool = True
    # Default configuration (CONFIG GET names, string values).
    config_defaults: dict[str, str] = field(default_factory=dict)
    # Every parameter ``CONFIG GET *`` lists, with its default (CONFIG-DIALECT-3); None: 7.0.15's
    # (``spec/config.py``). ``config_hidden``: parameters found only by their exact name.
    config_parameters: dict[str, str] | None = None
    config_hidden: dict[str, str] = field(default_factory=dict)

    # -- 6.2: before the 7.0 stream counters ---------------------------
    # 7.0 keeps entries-added, max-deleted-entry-id, recorded-first-entry-id and each
    # group's entries-read, shows them and the lag in XINFO, and takes ENTRIESREAD,
    # ENTRIESADDED and MAXDELETEDID options. 6.2 has none of them.
    stream_counters: bool = True
    # XADD accepts an explicit ms with an automatic sequence (``5-*``): 7.0+.
    xadd_auto_sequence: bool = True
    # 7.0's XCLAIM/XAUTOCLAIM drop a pending entry whose stream entry was deleted
    # (XAUTOCLAIM reports it in a third array); 6.2 claims it and replies nil for it.
    claims_drop_deleted: bool = True
    # 7.0's command table knows subcommands (arity per subcommand, "unknown
    # subcommand" texts, quotes in unknown-command errors); 6.2 checks them in the
    # command itself, with other texts. ``lookup`` and ``unknown_command_error`` are
    # the dispatcher's (DISPATCH-1, DISPATCH-2, DISPATCH-DIALECT-1).
    subcommand_table: bool = True
    lookup: Lookup = table.lookup
    unknown_command_error: Callable[[list[bytes]], str] = table.unknown_command_error
    # 7.0 wakes blocked XREADGROUP clients when their key is deleted or overwritten.
    deleted_key_wakes_readgroup: bool = True
    # A blocking list command's timeout in seconds is rounded up to whole milliseconds (7.0+);
    # 6.2 truncates it (LIST-DIALECT-1).
    block_timeout_round_up: bool = True
    # A blocked client unblocked with an error counts a failed call of its command in INFO
    # commandstats (7.0+); 6.2 counts only the error (STATS-DIALECT-1).
    unblock_error_fails_call: bool = True
    # FLUSHALL adds one to the dirty counter beyond the keys it removed (6.2; STATS-DIALECT-3).
    flushall_counts_itself: bool = False
    # FLUSHALL's save (with save points set) leaves the dirty counter as it was (6.2); 7.0 and Valkey
    # leave it at zero (FLUSH-6).
    flushall_save_keeps_changes: bool = False
    # XGROUP DELCONSUMER of a missing consumer still adds one to the dirty counter (6.2; STATS-DIALECT-4).
    delconsumer_always_counts: bool = False
    # Creating a consumer (XREADGROUP, XGROUP CREATECONSUMER aside) adds one to the dirty counter
    # (7.0+); 6.2 counts nothing for it (STATS-DIALECT-5).
    consumer_creation_counts: bool = True
    # An XREADGROUP of the pending entries (history) adds one to the dirty counter per stream served;
    # 7.4 counts only a stream whose read propagated something, and a history read propagates nothing
    # (STATS-DIALECT-6).
    history_read_counts: bool = True
    # An EXEC whose commands changed something adds one more to the dirty counter (the EXEC it
    # propagates; 6.2, STATS-DIALECT-8).
    exec_counts_itself: bool = False
    # What CLIENT UNBLOCK adds to the unblocked command's commandstats (STATS-9): "failed" (7.0: a
    # failed call, TIMEOUT or ERROR), "failed-on-error" (7.2, 7.4), "rejected-on-error" (Valkey), "none" (6.2).
    client_unblock_counts: str = "failed"
    # 7.0 bounds the default work limit of a ``~`` trim (100 x stream-node-max-entries, wrapped
    # to 64 bits) to [1, 1000000], 10000 when it is not positive; 6.2 uses it unbounded.
    approx_limit_bounded: bool = True
    # 6.2 wraps a transaction's propagated writes in MULTI/EXEC (even one) and nothing else;
    # 7.0 wraps whatever one command propagates when it is more than one op.
    wraps_transactions_only: bool = False
    # 6.2's compact sorted sets are ziplists: OBJECT ENCODING and DUMP name them so, scores keep
    # -0's sign, ZPOPMIN/ZPOPMAX read any count and a count below 1 replies an empty array at
    # once, and there is no ZMPOP, BZMPOP or ZINTERCARD (ZSET-DIALECT-1).
    zset_ziplist: bool = False
    # LPOS's error for RANK 0 (LIST-DIALECT-2: 6.2's words end at "the second, ...").
    lpos_rank_zero_error: str = ("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
                                 "or use negative to start from the end of the list")

    # SET accepts GET together with NX (7.0+); 6.2 refuses the pair as a syntax error.
    set_nx_with_get: bool = True
    # SET's error for an expiry out of range (SET-2, SET-DIALECT-1).
    set_invalid_expire_error: str = "ERR invalid expire time in 'set' command"
    # How a SET with an expiry is propagated (SET-6, SET-DIALECT-2): "pxat" (7.0: every
    # expiry as ``SET key value PXAT <absolute ms>``), "px" (6.2: EX and PX as
    # ``PX <ms>``, EXAT and PXAT as ``PXAT <absolute ms>``), "pxat-verbatim" (Valkey:
    # as 7.0, but a PXAT SET is propagated as typed).
    set_expiry_propagation: str = "pxat"
    # GETEX checks its expiry time before looking the key up (Valkey; GETEX-DIALECT-1)
    getex_checks_time_first: bool = False
    # WATCH remembers a key that had already expired, which then does not fail EXEC (not 6.2; EXPIRE-WATCH-1)
    watch_remembers_expired: bool = True
    # EXPIRE or GETEX with a time already past notifies "expired", not "del" (Valkey; EXPIRE-DIALECT-2)
    past_expiry_notifies_expired: bool = False
    # INFO takes several section names (7.0+); 6.2 takes at most one (INFO-DIALECT-2).
    info_multiple_sections: bool = True
    # CONFIG GET looks up an argument without glob characters as given and replies it under
    # that spelling (7.0+); 6.2 matches every argument as a pattern (CONFIG-DIALECT-2).
    config_get_plain_names: bool = True
    # An unauthenticated client gets NOAUTH only after the lookup and arity checks (7.0);
    # Valkey refuses it before them (DISPATCH-DIALECT-2).
    auth_before_lookup: bool = False
    # HELLO applies each option as it parses it (7.0); Valkey parses them all, then
    # authenticates, then sets the name (HELLO-DIALECT-2).
    hello_options_then_auth: bool = False
    # How HELLO's NOAUTH error writes the AUTH form (HELLO-8, HELLO-DIALECT-2).
    hello_auth_form: str = "HELLO AUTH <user> <pass>"

    # CLIENT LIST/INFO field names when they are not 7.0's (CLIENT-DIALECT-1).
    client_list_fields: tuple[str, ...] = ()
    # Commands (``name`` or ``container|subcommand``, lowercase) whose behaviour in this
    # dialect the model does not cover yet, and why: a trace using one is "unsupported".
    unsupported: dict[str, str] = field(default_factory=dict)
    # The last line of every HELP reply.
    help_last_line: str = "    Prints this help."
    # INFO's sections in ``INFO everything`` order and their fields, as "# Title" lines each
    # followed by its field names (INFO-DIALECT-1); None: 7.0's. ``info_values`` are the
    # fields whose value is the dialect's, not the host's.
    info_layout: str | None = None
    info_values: dict[str, str] = field(default_factory=dict)

    # -- replication (spec/rules/replication.md, REPL-DIALECT-*) --------------
    # ``REPLICAOF host port`` disconnects the node's own replicas at once (6.2); 7.0+ keeps
    # them until its ID changes or it loads a full synchronisation (REPL-DIALECT-1).
    replicaof_disconnects_replicas: bool = False
    # The backlog is a list of 16 KiB blocks trimmed a block at a time (7.0+); 6.2's is a ring
    # buffer of exactly repl-backlog-size bytes (REPL-DIALECT-2).
    backlog_in_blocks: bool = True
    # A node that starts as a primary from an RDB with replication info keeps that ID as its
    # secondary ID and continues from its offset (7.0+); 6.2 uses it only on a replica (REPL-DIALECT-3).
    rdb_replication_on_primary: bool = True
    # A primary with neither backlog nor replicas still adds 1 to its offset per command it feeds
    # (an AOF write, a WAIT's REPLCONF GETACK), for WAITAOF's bookkeeping (7.2+; REPL-DIALECT-4).
    offset_counts_without_backlog: bool = False
    # A client's WAIT offset is the primary's offset after its last command that moved it (7.2+,
    # Valkey); 7.0 and 6.2 set it after every command (WAIT-DIALECT-1).
    woff_after_propagation_only: bool = False
    # WAIT's error on a replica (WAIT-5, WAIT-DIALECT-2).
    wait_on_replica_error: str = (
        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica "
        "is configured to be writable (which is not the default) writes to replicas are just local and are not "
        "propagated.")
    # INFO replication has Valkey 8's dual-channel fields: ``replicas_repl_buffer_size`` and
    # ``_peak`` on a replica, ``type=`` per replica line, ``replicas_waiting_psync`` (REPL-DIALECT-5).
    info_replication_dual_channel: bool = False
    # A replica forgets its cached master when ``+FULLRESYNC`` arrives, so INFO shows offset 1 during
    # the transfer (6.2); 7.0+ keeps it until the snapshot is loaded (REPL-19, REPL-DIALECT-6).
    full_sync_forgets_cached_master: bool = False

    # -- 7.2+ ---------------------------------------------------------
    # Blocked readers are served by re-executing their command (7.2's blocking rework):
    # multi-key replies, no 1000 default COUNT, NOGROUP/WRONGTYPE texts of the command,
    # the consumer created when the client blocks.
    blocked_reexecution: bool = False
    # XREADGROUP, XCLAIM and XAUTOCLAIM create the consumer and refresh its seen-time
    # at every call; active-time records the last successful delivery or claim and
    # XINFO shows it (``inactive``, ``active-time``).
    consumer_active_time: bool = False
    # ``XADD k ms-*`` whose sequence is exhausted replies the "equal or smaller" error.
    xadd_auto_sequence_overflow_is_too_small: bool = False
    # XSETID refuses an ID below the stream's max-deleted-entry-id.
    xsetid_checks_max_deleted: bool = False
    # The XREAD/XREADGROUP unbalanced-list error names the command and its special ID.
    unbalanced_names_command: bool = False

    # -- 7.4+ -----------------------------------------------------------
    # ``XREAD ... +`` reads the last entry of the stream; XREADGROUP refuses ``+`` in words.
    xread_plus_id: bool = False
    # ``XREAD ... +`` on a stream whose last-generated-id is 0-0 (created empty) is an error.
    xread_plus_zero_last_id_error: bool = False
    # A BLOCK timeout that overflows when added to the clock is an error (7.2+).
    block_timeout_range_check: bool = False
    # The SELECT of a wrapped unit's first op comes after its MULTI, not before it.
    select_after_multi: bool = False
    # Small sets of non-integers are listpacks, listed in insertion order (SETS-DIALECT-1).
    set_listpack: bool = False
    # SPOP with a count propagates one SREM naming every member it took (in batches of 1024), and an emptying
    # SPOP propagates UNLINK under ``lazyfree-lazy-server-del`` (SETS-DIALECT-2); 7.0 and 6.2: one SREM per member, DEL.
    spop_one_srem: bool = False
    # Doubles in replies are ``d2string``'s shortest digits, not ``%.17g`` (ZSET-DIALECT-2).
    double_replies_shortest: bool = False
    # ZADD and ZRANGESTORE size a new sorted set by the elements they add, and ZADD converts a listpack
    # given more pairs than it may hold; ZRANK/ZREVRANK take WITHSCORE (ZSET-DIALECT-2).
    zset_size_hints: bool = False
    # Doubles are read by fast_float (``valkey_strtod``): no hexadecimal, no leading white space in a
    # score range (ZSET-DIALECT-3; Valkey 9.1.2, measured).
    fast_float_doubles: bool = False
    # A successful FUNCTION FLUSH also counts one ``config|get`` call in INFO commandstats: the Lua
    # engine it restarts runs CONFIG GET (Valkey 9.1.2, measured; STATS-DIALECT-2).
    function_flush_counts_config_get: bool = False
    # XREADGROUP propagates XGROUP SETID ... ENTRIESREAD after the XCLAIMs of its deliveries.
    readgroup_propagates_group_id: bool = False

    # -- Valkey -------------------------------------------------------------
    # HELLO's ``server`` field and INFO's server identity.
    server_name: str = "redis"
    # HELLO lists the built-in Lua engine as a module.
    lua_module: bool = False
    # The 8.0 entries-read and lag fixes (Redis PRs #13338, #13473), which Valkey also has.
    lag_fixes: bool = False
    # MULTI and WATCH inside MULTI are refused as "no-multi" commands, which dooms the transaction.
    multi_watch_are_no_multi: bool = False
    # That refusal names the command (Valkey 9.1); Valkey 8.1 uses the general no-multi text.
    no_multi_error_names_command: bool = True
    # CLIENT LIST's multi= is 0 rather than -1 outside a transaction once the client used MULTI.
    client_multi_kept: bool = False

    # -- outside the model (the reference server's; spec/dialects.md, "Server-only switches") --
    # DEBUG is refused unless ``enable-debug-command`` allows it (7.0+); 6.2 has no such option.
    debug_needs_enabling: bool = True
    # DEBUG LOADAOF with no AOF on disk: Redis exits (None); Valkey replies this error (LOADAOF-DIALECT-1).
    debug_loadaof_missing_error: str | None = None
    # The AOF is one file, ``appendfilename`` in ``dir`` (6.2; AOF-SINGLE-1), not 7.0's multi-part directory.
    aof_single_file: bool = False
    # BGSAVE and BGREWRITEAOF run by EXEC are scheduled for the cron rather than started (7.0+, Valkey;
    # FORK-3); 6.2 starts them at once.
    exec_schedules_children: bool = True
    # After three failed AOF rewrites in a row the cron postpones its rewrites (``aofRewriteLimited``,
    # 7.0+, Valkey; AOF-LIMIT-1); 6.2 retries at once.
    aof_rewrite_limited: bool = True
    # COMMAND has DOCS and LIST, ten fields per command, and COMMAND INFO without names lists
    # every command (7.0+); 6.2 has seven fields, no DOCS or LIST, and an empty COMMAND INFO.
    command_docs: bool = True
    # CLIENT KILL ID refuses an ID below 1 (7.0+); 6.2 takes any integer, and ID 0 filters nothing.
    client_kill_id_positive: bool = True
    # RESET clears CLIENT NO-EVICT (7.2+); 7.0 keeps it.
    reset_clears_no_evict: bool = False
    # CLIENT NO-TOUCH ON|OFF works (7.2+); 7.0's table has it, and answers "unknown subcommand".
    client_no_touch: bool = False
    # CLIENT SETINFO LIB-NAME|LIB-VER exists (7.2+).
    client_setinfo: bool = False
    # CLIENT CAPA and CLIENT IMPORT-SOURCE exist (Valkey).
    client_capa: bool = False
    # CLIENT LIST and CLIENT KILL take Valkey's filters (ID lists, TYPE, USER, ADDR, LADDR, IP,
    # NAME, LIB-NAME, LIB-VER, DB, FLAGS, CAPA, MAXAGE, IDLE, their NOT- forms, SKIPME).
    client_filters_extended: bool = False
    # CLIENT UNBLOCK and CLIENT PAUSE refuse arguments past their last option (Redis); Valkey ignores them.
    client_extra_arguments_refused: bool = True
    # Whose CLIENT HELP and COMMAND HELP texts: "6.2", "7.0", "7.2", "7.4" or "valkey".
    help_texts: str = "7.0"
    # CLIENT TRACKING: a message redirected to the running client goes before its reply (Redis);
    # Valkey sends it after.
    tracking_redirect_before_reply: bool = True
    # CLIENT TRACKING BCAST with two new overlapping prefixes, the pair found from the second
    # prefix on: the error, then ``+OK`` with tracking on (Redis's stray second reply); Valkey
    # answers the error alone.
    tracking_overlap_then_ok: bool = True
    # CLIENT TRACKING: FLUSHALL/FLUSHDB's null for the running client itself goes before its reply
    # (TRACKING-DIALECT-1: 7.4.1, measured; every other dialect sends it after).
    tracking_flush_null_before_reply: bool = False
    # notify-keyspace-events knows the ``n`` class and a key's creation sends ``new`` (NOTIFY-DIALECT-1: 7.0+).
    keyspace_new_events: bool = True
    # The RDB version DUMP writes and the newest one RESTORE loads (DUMP-2, DUMP-4, DUMP-DIALECT-1):
    # 6.2 9, 7.0 10, 7.2 11, 7.4 12, Valkey 8.1 11, Valkey 9.1 80 (Valkey's own numbering, measured;
    # Valkey 9 refuses version 0 and Redis's 12..79).
    rdb_version: int = 10
    # SCAN's TYPE lookup deletes the key it finds expired, and the key then passes ``TYPE none``
    # (SCAN-5: 6.2 and 7.0; 7.2+ leaves such a key out).
    scan_type_none_lists_expired: bool = True
    # SCAN compares TYPE while walking, before lazy expiry, and refuses unknown type names (SCAN-4,
    # SCAN-DIALECT-1: Valkey).
    scan_type_known_names: bool = False
    # The SCAN options other scans take, each refused with its own error (SCAN-DIALECT-1).
    scan_refused_flags: tuple[str, ...] = ()

    def config_listed(self) -> dict[str, str]:
        """The parameters ``CONFIG GET *`` lists, with their defaults (CONFIG-2, CONFIG-DIALECT-3)."""
        return CONFIG_DEFAULTS if self.config_parameters is None else self.config_parameters

    def config_known(self) -> dict[str, str]:
        """Every parameter CONFIG GET and CONFIG SET know by name: the listed and the hidden ones."""
        if not self.config_hidden:
            return self.config_listed()
        return {**self.config_listed(), **self.config_hidden}

    def unsupported_reason(self, argv: list[bytes]) -> str | None:
        """Why ``argv`` is outside this dialect's model (``unsupported``), or None."""
        name = c_string(argv[0]).decode("latin-1").lower()
        found = self.unsupported.get(name)
        if found is None and len(argv) > 1:
            name = f"{name}|{c_string(argv[1]).decode('latin-1').lower()}"
            found = self.unsupported.get(name)
        return None if found is None else f"uses {name.upper()}, which the {self.name} model does not cover: {found}"


# -- 6.2's dispatch (DISPATCH-DIALECT-1) -------------------------------------------------
# 6.2 looks up argv[0] only; a container command checks its subcommand and the
# argument count itself. These are the argument counts 6.2 accepts where they
# differ from 7.0's table: a number is an arity (-n: at least n), a tuple lists
# the counts accepted.
_LEGACY_ARITY: dict[str, int | tuple[int, ...]] = {
    "xsetid": 3,
    "xgroup|create": (5, 6),
    "xgroup|setid": 5,
    "xinfo|help": -2,
    "config|get": 3,
    "config|set": 4,
    "command|getkeys": -3,  # COMMAND-DIALECT-1: the command's own arity is checked by GETKEYS
    # EXPIRE-DIALECT-1: 6.2's EXPIRE family takes no NX/XX/GT/LT
    "expire": 3,
    "pexpire": 3,
    "expireat": 3,
    "pexpireat": 3,
    "script|exists": -2,  # SCRIPT-DIALECT-6: 6.2's SCRIPT EXISTS with no SHA replies an empty array
}
# Subcommands that 6.2 does not have.
_LEGACY_MISSING = frozenset({"client|no-evict", "client|no-touch", "pubsub|shardchannels", "pubsub|shardnumsub",
                             "command|docs", "command|list", "command|getkeysandflags"})  # COMMAND-DIALECT-1
# Commands that 6.2 does not have (FUNCTION-DIALECT-1).
# PUBSUB-DIALECT-1, ZSET-DIALECT-1, EXPIRE-DIALECT-1, LIST-DIALECT-2 and 7.0's scripting commands
_LEGACY_MISSING_COMMANDS = frozenset({
    "function", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "ssubscribe", "sunsubscribe", "spublish", "zmpop",
    "bzmpop", "zintercard", "expiretime", "pexpiretime", "lmpop", "sintercard", "sort_ro",
    "blmpop"})
_legacy_specs: dict[tuple[str, ...], table.CommandSpec] = {}


def _legacy_arity_ok(spec: table.CommandSpec, argc: int) -> bool:
    rule = _LEGACY_ARITY.get(spec.fullname)
    if rule is None:
        return spec.arity_ok(argc)
    if isinstance(rule, tuple):
        return argc in rule
    return argc == rule if rule > 0 else argc >= -rule


def _legacy_spec(spec: table.CommandSpec, name: str, arity: int) -> table.CommandSpec:
    key = (spec.fullname, name)
    found = _legacy_specs.get(key)
    if found is None:
        found = _legacy_specs[key] = replace(spec, name=name, arity=arity)
    return found


def legacy_lookup(argv: list[bytes]) -> table.CommandSpec | None:
    """6.2's ``lookupCommand`` as the 7.0 table sees it (DISPATCH-DIALECT-1).

    A subcommand 6.2 would refuse (unknown, or a count of arguments it does not
    take) resolves to the pseudo-subcommand ``<container>|*``, with the
    container's arity, whose handler answers as the 6.2 command does.
    """
    spec = table.lookup(argv)
    if spec is not None and (spec.container or spec.name) in _LEGACY_MISSING_COMMANDS:
        return None
    if spec is None:
        base = table.lookup(argv[:1])
        if base is not None and base.name in _LEGACY_MISSING_COMMANDS:
            return None
        if base is None or not base.subcommands:
            return None
        return _fallback(base)
    if spec.container is None:
        if spec.fullname in _LEGACY_ARITY:
            rule = _LEGACY_ARITY[spec.fullname]
            assert isinstance(rule, int)
            return _legacy_spec(spec, spec.name, rule)
        return spec
    if spec.fullname in _LEGACY_MISSING or not _legacy_arity_ok(spec, len(argv)):
        base = table.lookup(argv[:1])
        assert base is not None
        return _fallback(base)
    if spec.fullname in _LEGACY_ARITY:
        return _legacy_spec(spec, spec.name, -2)  # its count was checked just above
    return spec


def _fallback(base: table.CommandSpec) -> table.CommandSpec:
    key = (base.name, "*")
    found = _legacy_specs.get(key)
    if found is None:
        found = _legacy_specs[key] = table.CommandSpec("*", base.arity, base.flags, container=base.name)
    return found


def legacy_unknown_command_error(argv: list[bytes]) -> str:
    """6.2's unknown-command text: backquotes, each argument followed by a comma (DISPATCH-DIALECT-1)."""
    args = b""
    for a in argv[1:]:
        if len(args) >= 128:
            break
        args += b"`" + c_string(a)[:128 - len(args)] + b"`, "
    return table.rejected_text(b"ERR unknown command `" + c_string(argv[0]) + b"`, with args beginning with: " + args)


_CLIENT_FIELDS_70 = tuple(
    "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp "
    "obl oll omem tot-mem events cmd user redir resp".split())

_STREAM_DEFAULTS = {
    "stream-node-max-entries": "100",
    "stream-node-max-bytes": "4096",
}

REDIS_70 = Dialect(
    name="redis-7.0",
    server="redis",
    version="7.0.15",
    time_snapshot_per_command=False,
    config_defaults=dict(_STREAM_DEFAULTS),
    config_hidden=CONFIG_HIDDEN_70,
)

REDIS_62 = replace(
    REDIS_70,
    name="redis-6.2",
    version="6.2.14",
    config_parameters=CONFIG_62,
    config_hidden={},
    full_sync_forgets_cached_master=True,
    keyspace_new_events=False,
    rdb_version=9,
    stream_counters=False,
    xadd_auto_sequence=False,
    claims_drop_deleted=False,
    subcommand_table=False,
    lookup=legacy_lookup,
    unknown_command_error=legacy_unknown_command_error,
    deleted_key_wakes_readgroup=False,
    block_timeout_round_up=False,
    unblock_error_fails_call=False,
    flushall_counts_itself=True,
    flushall_save_keeps_changes=True,
    exec_counts_itself=True,
    client_unblock_counts="none",
    delconsumer_always_counts=True,
    consumer_creation_counts=False,
    wraps_transactions_only=True,
    approx_limit_bounded=False,
    replicaof_disconnects_replicas=True,
    backlog_in_blocks=False,
    rdb_replication_on_primary=False,
    info_layout=INFO_LAYOUT_62,
    set_nx_with_get=False,
    zset_ziplist=True,
    lpos_rank_zero_error="ERR RANK can't be zero: use 1 to start from the first match, 2 from the second, ...",
    set_invalid_expire_error="ERR invalid expire time in set",
    set_expiry_propagation="px",
    watch_remembers_expired=False,
    info_multiple_sections=False,
    config_get_plain_names=False,
    unsupported={"client|help": "6.2's help text is not modelled"},
    debug_needs_enabling=False,
    aof_single_file=True,
    exec_schedules_children=False,
    aof_rewrite_limited=False,
    command_docs=False,
    client_kill_id_positive=False,
    help_texts="6.2",
    client_list_fields=tuple(
        "id addr laddr fd name age idle flags db sub psub multi qbuf qbuf-free argv-mem obl oll omem "
        "tot-mem events cmd user redir".split()),
)

# CLIENT SETINFO came with 7.2 (CLIENT-SETINFO-1); 7.0's table has no such subcommand.
CLIENT_SETINFO = table.CommandSpec("setinfo", 4, frozenset({"noscript", "loading", "stale"}), container="client")


# WAITAOF came with 7.2 (WAITAOF-1); 7.0's table has no such command.
WAITAOF = table.CommandSpec("waitaof", 4, frozenset({"noscript"}))


# ZRANK and ZREVRANK take WITHSCORE from 7.2 (ZSET-DIALECT-2): their arity is -3.
RANKS_72 = {name: table.CommandSpec(name, -3, frozenset({"readonly", "fast"}), 1, 1, 1)
            for name in ("zrank", "zrevrank")}


# COMMAND GETKEYS and GETKEYSANDFLAGS take a command without arguments from 7.2 (COMMAND-DIALECT-2): arity -3.
GETKEYS_72 = {name: replace(table.COMMANDS["command"].subcommands[name], arity=-3)
              for name in ("getkeys", "getkeysandflags")}


def lookup_72(argv: list[bytes]) -> table.CommandSpec | None:
    """7.2's ``lookupCommand``: 7.0's table, CLIENT SETINFO, WAITAOF and ZRANK's new arity."""
    spec = table.lookup(argv)
    if spec is not None and spec.name in RANKS_72 and spec.container is None:
        return RANKS_72[spec.name]
    if spec is not None and spec.container == "command" and spec.name in GETKEYS_72:
        return GETKEYS_72[spec.name]  # COMMAND-DIALECT-2
    if spec is None and len(argv) > 1 and c_string(argv[1]).lower() == b"setinfo" \
            and c_string(argv[0]).lower() == b"client":
        return CLIENT_SETINFO
    if spec is None and argv and c_string(argv[0]).lower() == b"waitaof":
        return WAITAOF
    return spec


REDIS_72 = replace(
    REDIS_70,
    name="redis-7.2",
    version="7.2.6",
    lookup=lookup_72,
    tracking_redirect_before_reply=False,  # TRACKING-DIALECT-1: after the reply, as Valkey (measured)
    client_unblock_counts="failed-on-error",
    rdb_version=11,
    time_snapshot_per_command=True,
    pause_holds_at_its_end=False,
    offset_counts_without_backlog=True,
    woff_after_propagation_only=True,
    blocked_reexecution=True,
    consumer_active_time=True,
    xadd_auto_sequence_overflow_is_too_small=True,
    xsetid_checks_max_deleted=True,
    unbalanced_names_command=True,
    block_timeout_range_check=True,
    select_after_multi=True,
    set_listpack=True,
    scan_type_none_lists_expired=False,  # SCAN-5
    spop_one_srem=True,
    double_replies_shortest=True,
    zset_size_hints=True,
    help_last_line="    Print this help.",
    info_layout=INFO_LAYOUT_72,
    help_texts="7.2",
    hello_options_then_auth=True,
    hello_auth_form="HELLO <proto> AUTH <user> <pass>",
    set_expiry_propagation="pxat-verbatim",
    config_parameters=CONFIG_72,
    config_hidden=CONFIG_HIDDEN_SINCE_72,
    reset_clears_no_evict=True,
    client_no_touch=True,
    client_setinfo=True,
    client_list_fields=(*_CLIENT_FIELDS_70, "lib-name", "lib-ver"),
)

_CLIENT_FIELDS_74 = tuple(
    f for name in REDIS_72.client_list_fields for f in ((name, "watch") if name == "multi" else (name,)))
REDIS_74 = replace(REDIS_72, name="redis-7.4", version="7.4.1", xread_plus_id=True,
                   xread_plus_zero_last_id_error=True, readgroup_propagates_group_id=True,
                   client_list_fields=_CLIENT_FIELDS_74, info_layout=INFO_LAYOUT_74, config_parameters=CONFIG_74,
                   help_texts="7.4", rdb_version=12, history_read_counts=False,
                   tracking_flush_null_before_reply=True,  # TRACKING-DIALECT-1
                   scan_refused_flags=("novalues",))  # SCAN-DIALECT-1

VALKEY_91 = replace(
    REDIS_74,
    name="valkey-9.1",
    server="valkey",
    version="9.1.2",
    config_parameters=CONFIG_VALKEY_91,
    xread_plus_zero_last_id_error=False,
    history_read_counts=True,
    rdb_version=80,
    server_name="valkey",
    lua_module=True,
    fast_float_doubles=True,
    help_last_line="    Print this help.",
    info_layout=INFO_LAYOUT_VALKEY_91,
    unsupported={
        "client|capa": "a Valkey-only subcommand",
        "client|import-source": "a Valkey-only subcommand",
        "client|help": "Valkey's help text is not modelled",
    },
    info_values={"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "9.1.2",
                 "valkey_release_stage": "ga", "server_mode": "standalone"},
    lag_fixes=True,
    wait_on_replica_error=(
        "ERR WAIT cannot be used with replica instances. Please also note that if a replica is configured to be "
        "writable (which is not the default) writes to replicas are just local and are not propagated."),
    info_replication_dual_channel=True,
    function_flush_counts_config_get=True,
    client_unblock_counts="rejected-on-error",
    multi_watch_are_no_multi=True,
    client_multi_kept=True,
    client_capa=True,
    debug_loadaof_missing_error="ERR Error trying to load the AOF files, check server logs.",
    client_filters_extended=True,
    client_extra_arguments_refused=False,
    help_texts="valkey",
    tracking_redirect_before_reply=False,
    tracking_flush_null_before_reply=False,
    tracking_overlap_then_ok=False,
    past_expiry_notifies_expired=True,
    scan_type_known_names=True,  # SCAN-4, SCAN-DIALECT-1
    scan_refused_flags=("novalues", "noscores"),
    getex_checks_time_first=True,
    set_expiry_propagation="pxat-verbatim",
    auth_before_lookup=True,
    hello_options_then_auth=True,
    hello_auth_form="HELLO <proto> AUTH <user> <pass>",
    client_list_fields=tuple(
        "id addr laddr fd name age idle flags capa db sub psub ssub multi watch qbuf qbuf-free argv-mem "
        "multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp lib-name lib-ver tot-net-in "
        "tot-net-out tot-cmds".split()),
)

VALKEY_81 = replace(
    VALKEY_91,
    name="valkey-8.1",
    version="8.1.8",
    getex_checks_time_first=False,  # GETEX-DIALECT-1: 9.1 only
    rdb_version=11,
    function_flush_counts_config_get=False,  # STATS-DIALECT-2: measured on 8.1.8
    xread_plus_zero_last_id_error=True,
    lua_module=False,
    no_multi_error_names_command=False,
    fast_float_doubles=False,  # ZSET-DIALECT-3: 8.1.8 reads hexadecimal scores (measured)
    auth_before_lookup=False,
    info_layout=INFO_LAYOUT_VALKEY_81,
    config_parameters=CONFIG_VALKEY_81,
    info_values={**VALKEY_91.info_values, "valkey_version": "8.1.8"},
)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (REDIS_70, REDIS_62, REDIS_72, REDIS_74, VALKEY_81, VALKEY_91)}

# (server name, major.minor) of a trace header -> its dialect
_BY_SERVER_VERSION: dict[tuple[str, str], Dialect] = {
    ("redis", "6.2"): REDIS_62,
    ("redis", "7.0"): REDIS_70,
    ("redis", "7.2"): REDIS_72,
    ("redis", "7.4"): REDIS_74,
    ("valkey", "8.1"): VALKEY_81,
    ("valkey", "9.1"): VALKEY_91,
}


class UnknownDialect(ValueError):
    """No dialect of that name, or none for that server version."""


def get_dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise UnknownDialect(
            f"unknown dialect {name!r}; known: {', '.join(sorted(DIALECTS))}") from None


# ``--dialect nearest``: for a live server whose version no dialect models, the nearest one.
NEAREST = "nearest"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split(".")[:3])


def nearest_dialect(server: str, version: str) -> Dialect | None:
    """The dialect of the same server family closest to ``version``: the newest one not above it,
    else the oldest one above it; None for a server family no dialect models."""
    family = sorted((d for d in DIALECTS.values() if d.server == server), key=lambda d: _version_key(d.version))
    if not family:
        return None
    below = [d for d in family if _version_key(d.version)[:2] <= _version_key(version)[:2]]
    return below[-1] if below else family[0]


def dialect_for_server(server: str, version: str) -> Dialect:
    """The dialect for a trace header's ``server`` (``redis``, ``7.0.15``; ``valkey``, ``9.1.2``)."""
    major_minor = ".".join(version.split(".")[:2])
    found = _BY_SERVER_VERSION.get((server, major_minor))
    if found is None:
        raise UnknownDialect(f"no dialect models {server} {version}; known: {', '.join(sorted(DIALECTS))}")
    return found
