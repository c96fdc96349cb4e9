"""CLIENT TRACKING, server-assisted client-side caching (spec/rules/tracking.md): CLIENT TRACKING,
CACHING, GETREDIR, TRACKINGINFO, and the invalidation messages.

The tracking table (Redis's key -> client ids, one for every database) is kept per client:
``Client.tracked_keys`` holds the keys the table has under that client's id. Like Redis, ids stay
in the table when a client turns tracking off (TRACKING-4). A key is invalidated wherever a key is
signalled modified (``Server.touch_watched``, which every write reaches: ``Call.modified``,
``Call.deleted``, expiry): :func:`key_modified`. BCAST prefixes collect the keys modified during
a command and send them at its end (:func:`after_command`), which is the model's event-loop turn.

A message is a push to its client (``Server.pushes``, as models/pubsub.py sends them): RESP3
``[invalidate, keys]``; to a RESP2 redirect client in Pub/Sub mode, the message
``[message, __redis__:invalidate, keys]``; FLUSHDB/FLUSHALL's keys are a null. Where the push goes
relative to the running client's reply is not modelled: a client's pushes are compared in their
own order (traces/check/pushes.py).
"""

from __future__ import annotations

from xspec.models.messages import send_push as _push
from xspec.models.server import (
    HANDLERS,
    TRACKING_HOOKS,
    Call,
    CommandError,
    Handler,
    HandlerResult,
    Outcome,
    Server,
    command,
)
from xspec.models.state import Client, TrackingOptions
from xspec.spec import commands as table
from xspec.spec.errors import prefix_overlaps_existing, prefix_overlaps_provided
from xspec.spec.ids import c_string, parse_ll
from xspec.spec.resp import OK, Array, Bulk, Int, Map, NullBulk, Push, Reply, Set

INVALIDATE = Bulk(b"invalidate")
REDIR_BROKEN = Bulk(b"tracking-redir-broken")
CHANNEL = b"__redis__:invalidate"


# -- messages ---------------------------------------------------------------------------------
def _send(server: Server, c: Client, keys: Reply) -> None:
    """``sendTrackingMessage``: ``keys`` (an array of keys, or FLUSH*'s null) for tracking client ``c``
    (TRACKING-5)."""
    opts = c.tracking
    assert opts is not None
    to = c
    if opts.redirect:
        redirected = server.clients.get(opts.redirect)
        if redirected is None:  # TRACKING-6: the redirect client is gone
            opts.broken = True
            if c.proto == 3:
                _push(server, c, Push((REDIR_BROKEN, Int(opts.redirect))))
            return
        to = redirected
    if to.proto == 3:
        _push(server, to, Push((INVALIDATE, keys)))
    elif opts.redirect and to.subscriptions:  # TRACKING-5: a RESP2 redirect client in Pub/Sub mode
        _push(server, to, Push((Bulk(b"message"), Bulk(CHANNEL), keys)))


# -- the hooks ------------------------------------------------------------------------------------
def key_modified(server: Server, key: bytes) -> None:
    """``trackingInvalidateKey``: every client the table holds for ``key`` is told once and the key
    leaves the table (TRACKING-3); BCAST prefixes note it (TRACKING-7)."""
    running = server.tracking_running
    if server.tracking_prefixes:
        server.tracking_noted += tuple((p, key, running) for p in server.tracking_prefixes if key.startswith(p))
    holders = [c for c in server.clients.values() if key in c.tracked_keys]
    for c in sorted(holders, key=lambda c: c.id.to_bytes(8, "little")):  # the ids' radix tree order
        del c.tracked_keys[key]
        opts = c.tracking
        if opts is None or opts.bcast or (opts.noloop and c.id == running):
            continue
        _send(server, c, Array((Bulk(key),)))


def flushed(server: Server) -> None:
    """``trackingInvalidateKeysOnFlush``: every tracking client, in connection order, gets the null;
    the table empties (TRACKING-8)."""
    for c in server.clients.values():
        if c.tracking is not None:
            _send(server, c, NullBulk())
    for c in server.clients.values():
        c.tracked_keys.clear()


def command_keys(call: Call) -> list[bytes]:
    """The keys ``getKeysFromCommand`` finds for the running command (TRACKING-2)."""
    return table.command_keys(call.spec, call.argv)


def remember(call: Call) -> None:
    """``trackingRememberKeys`` after a read-only command of a tracking client (TRACKING-2)."""
    opts = call.client.tracking
    if opts is None or opts.bcast or (opts.optin and not opts.caching) or (opts.optout and opts.caching):
        return
    for key in command_keys(call):
        call.client.tracked_keys[key] = None


def after_command(server: Server, c: Client, out: Outcome) -> None:
    """The end of a top-level command: CLIENT CACHING lapses (TRACKING-9), BCAST messages go out
    (TRACKING-7), and the command's messages join its outcome."""
    opts = c.tracking
    if opts is not None and opts.caching and not c.in_multi and not c.last_cmd.startswith("client|"):
        opts.caching = False
    if server.tracking_noted:
        _broadcast(server)
    server.tracking_running = 0
    if server.pushes:
        out.pushes.extend(server.pushes)
        server.pushes = ()


def _broadcast(server: Server) -> None:
    """``trackingBroadcastInvalidationMessages``: per prefix in byte order, its keys in byte order to
    each of its clients (without a NOLOOP client's own keys)."""
    noted: dict[bytes, dict[bytes, int]] = {}
    for prefix, key, by in server.tracking_noted:
        noted.setdefault(prefix, {})[key] = by  # the last to modify the key counts (NOLOOP)
    server.tracking_noted = ()
    for prefix in sorted(noted):
        changed = noted[prefix]
        keys = sorted(changed)
        for c in server.clients.values():
            opts = c.tracking
            if opts is None or not opts.bcast or prefix not in opts.prefixes:
                continue
            mine = [k for k in keys if changed[k] != c.id] if opts.noloop else keys
            if mine:
                _send(server, c, Array(tuple(Bulk(k) for k in mine)))


def _disable(server: Server, c: Client) -> None:
    """``disableTracking``: the options and prefixes go; the keys stay in the table (TRACKING-4)."""
    opts = c.tracking
    c.tracking = None
    if opts is None:
        return
    server.tracking_prefixes = tuple(p for p in server.tracking_prefixes if any(
        o.tracking is not None and p in o.tracking.prefixes for o in server.clients.values()))


# -- CLIENT TRACKING and its companions ------------------------------------------------------------------
def _on_off(arg: bytes) -> bool:
    word = c_string(arg).lower()
    if word not in (b"on", b"off"):
        raise CommandError(table.SYNTAX)
    return word == b"on"


@command("client|tracking")
def client_tracking(call: Call) -> Reply:
    """TRACKING-1: the options as they come, then ON/OFF, then (for ON) how they combine."""
    argv, server = call.argv, call.server
    redirect = 0
    options: set[bytes] = set()
    prefixes: list[bytes] = []
    i = 3
    while i < len(argv):
        opt = c_string(argv[i]).lower()
        more = i + 1 < len(argv)
        if opt == b"redirect" and more:
            if redirect:
                raise CommandError("ERR A client can only redirect to a single other client")
            target = parse_ll(argv[i + 1])
            if target is None:
                raise CommandError(table.NOT_INTEGER)
            if target not in server.clients:
                raise CommandError("ERR The client ID you want redirect to does not exist")
            redirect = target
            i += 1
        elif opt in (b"bcast", b"optin", b"optout", b"noloop"):
            options.add(opt)
        elif opt == b"prefix" and more:
            prefixes.append(argv[i + 1])
            i += 1
        else:
            raise CommandError(table.SYNTAX)
        i += 1
    c = call.client
    if not _on_off(argv[2]):
        _disable(server, c)
        return OK
    bcast = b"bcast" in options
    optin, optout = b"optin" in options, b"optout" in options
    current = c.tracking
    if prefixes and not bcast:
        raise CommandError("ERR PREFIX option requires BCAST mode to be enabled")
    if current is not None and current.bcast != bcast:
        raise CommandError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                           "and then re-enabling it with a different mode.")
    if bcast and (optin or optout):
        raise CommandError("ERR OPTIN and OPTOUT are not compatible with BCAST")
    if optin and optout:
        raise CommandError("ERR You can't specify both OPTIN mode and OPTOUT mode")
    if current is not None and ((optin and current.optout) or (optout and current.optin)):
        raise CommandError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
                           "and then re-enabling it with a different mode.")
    if bcast:
        _check_prefixes(call, current, prefixes)
    opts = TrackingOptions(redirect=redirect, bcast=bcast, optin=optin, optout=optout, noloop=b"noloop" in options,
                           caching=current.caching if current is not None else False)
    if bcast:  # TRACKING-7: new prefixes add to the client's; none means every key
        mine = set(current.prefixes if current is not None else ()) | set(prefixes or [b""])
        opts.prefixes = tuple(sorted(mine))
        server.tracking_prefixes = tuple(sorted(set(server.tracking_prefixes) | mine))
    c.tracking = opts
    server.tracking_in_use = True
    return OK


def _check_prefixes(call: Call, current: TrackingOptions | None, prefixes: list[bytes]) -> None:
    """``checkPrefixCollisionsOrReply`` (TRACKING-7). Redis 7.0.15 and 6.2.14 answer a pair of new
    prefixes that overlap, found from the second new prefix on, with the error and then ``+OK``: two
    replies to one command, which the model does not produce (TRACKING-10)."""
    mine = sorted(current.prefixes) if current is not None else []
    for i, new in enumerate(prefixes):
        for old in mine:
            if new.startswith(old) or old.startswith(new):
                raise CommandError(prefix_overlaps_existing(new, old))
        for other in prefixes[i + 1:]:
            if new.startswith(other) or other.startswith(new):
                if i > 0 and call.server.dialect.tracking_overlap_then_ok:
                    raise CommandError("ERR xspec model: an error and then +OK for one CLIENT TRACKING "
                                       "is not modelled (TRACKING-10)")
                raise CommandError(prefix_overlaps_provided(new, other))


@command("client|trackinginfo")
def client_trackinginfo(call: Call) -> Reply:
    """TRACKING-11: the flags, the redirect, the prefixes."""
    opts = call.client.tracking
    flags = [b"on" if opts is not None else b"off"]
    prefixes: tuple[bytes, ...] = ()
    if opts is not None:
        if opts.bcast:
            flags.append(b"bcast")
        if opts.optin:
            flags += [b"optin", b"caching-yes"] if opts.caching else [b"optin"]
        if opts.optout:
            flags += [b"optout", b"caching-no"] if opts.caching else [b"optout"]
        if opts.noloop:
            flags.append(b"noloop")
        if opts.broken:
            flags.append(b"broken_redirect")
        prefixes = opts.prefixes
    return Map(((Bulk(b"flags"), Set(tuple(Bulk(f) for f in flags))), (Bulk(b"redirect"), _redirect(call.client)),
                (Bulk(b"prefixes"), Array(tuple(Bulk(p) for p in prefixes)))))


def _redirect(c: Client) -> Int:
    return Int(c.tracking.redirect if c.tracking is not None else -1)


@command("client|getredir")
def client_getredir(call: Call) -> Reply:
    return _redirect(call.client)  # TRACKING-11


@command("client|caching")
def client_caching(call: Call) -> Reply:
    """TRACKING-9: YES under OPTIN, NO under OPTOUT, for the next command or transaction."""
    opts = call.client.tracking
    if opts is None or not (opts.optin or opts.optout):
        raise CommandError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
                           "or OPTOUT mode enabled")
    answer = c_string(call.argv[2]).lower()
    if answer == b"yes":
        if not opts.optin:
            raise CommandError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif answer == b"no":
        if not opts.optout:
            raise CommandError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise CommandError(table.SYNTAX)
    opts.caching = True
    return OK


def _wrap_reset(reset: Handler) -> Handler:
    def reset_with_tracking(call: Call) -> HandlerResult:
        _disable(call.server, call.client)  # TRACKING-4: RESET turns tracking off
        return reset(call)

    return reset_with_tracking


def _wrap_flush(flush: Handler) -> Handler:
    def flush_with_tracking(call: Call) -> HandlerResult:
        result = flush(call)
        if call.server.tracking_in_use:
            flushed(call.server)  # TRACKING-8
        return result

    return flush_with_tracking


TRACKING_HOOKS.update(key_modified=key_modified, remember=remember, after_command=after_command)
HANDLERS["reset"] = _wrap_reset(HANDLERS["reset"])
HANDLERS["flushdb"] = _wrap_flush(HANDLERS["flushdb"])
HANDLERS["flushall"] = _wrap_flush(HANDLERS["flushall"])
