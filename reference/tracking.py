"""Server-assisted client-side caching (CLIENT TRACKING) as Redis 7.0.15 does it.

Default mode: the keys a tracking client's read-only commands name are
remembered (key -> client ids, whatever the database, as 7.0's one table);
when a key is modified (``ctx.modified``/``ctx.deleted``, 7.0's
``signalModifiedKey``) every client remembered for it gets one ``invalidate``
push and the key is forgotten. Ids stay in the table after the client turns
tracking off (7.0 removes them lazily), so a client that turns it on again
still hears about keys it read before. BCAST mode: keys modified under a
client's prefixes are collected and sent once per event-loop turn, one message
per prefix, keys in byte order. FLUSHDB/FLUSHALL send every tracking client
the null invalidation and empty the table. SWAPDB invalidates nothing (7.0.15).

Where the messages go (``sendTrackingMessage``): a RESP3 client gets pushes;
with REDIRECT they go to the redirect client when it speaks RESP3, or, when it
speaks RESP2 and is in Pub/Sub mode, as a message on ``__redis__:invalidate``
(nothing when it is not subscribed); when the
redirect client is gone, a RESP3 tracking client gets ``tracking-redir-broken``
each time an invalidation would have been sent. Invalidations of the running
client's own keys (and FLUSH*'s null to it) follow its reply; a message
redirected to the running client precedes its reply (7.0.15's and 6.2.14's order;
Redis 7.2/7.4 and Valkey send it after: TRACKING-DIALECT-1). Redis 7.4.1 sends
FLUSH*'s null to the running client before its reply (measured). The rules are
spec/rules/tracking.md's; the model has them too (models/tracking.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from xspec.reference.api import POSTPONED, PreRendered
from xspec.reference.protocol import Pushed, Raw, encode_into
from xspec.spec import commands as table
from xspec.spec.errors import prefix_overlaps_existing, prefix_overlaps_provided
from xspec.spec.resp import Array, Bulk, Int, Push, Reply, encode

if TYPE_CHECKING:
    from xspec.spec.commands import CommandSpec


class Writer(Protocol):
    """A client's connection as tracking uses it."""

    def write(self, out: list[bytes]) -> None:
        """Queue bytes for the client in order with its replies."""
        ...


class Client(Protocol):
    """What tracking reads and sets of a client (``reference.core.Client``)."""

    id: int
    proto: int
    tracking: bool
    redirect: int
    reply_mode: str
    in_multi: bool
    last_cmd: str
    ctx: Any  # its command context, through which the server's observer is reached

    @property
    def conn(self) -> Writer | None: ...

INVALIDATE = Bulk(b"invalidate")
MESSAGE = Bulk(b"message")
TRACKING_CHANNEL = Bulk(b"__redis__:invalidate")
REDIR_BROKEN = Bulk(b"tracking-redir-broken")
# FLUSH*'s "every key": the tracking client's null, in its own protocol (``shared.null[c->resp]``).
FLUSHED = {2: Raw(b"$-1\r\n"), 3: Raw(b"_\r\n")}


class ClientTracking:
    """One tracking client's options (7.0's CLIENT_TRACKING_* flags and its prefixes)."""

    __slots__ = ("bcast", "optin", "optout", "noloop", "caching", "broken", "prefixes")

    def __init__(self) -> None:
        self.bcast = self.optin = self.optout = self.noloop = False
        self.caching = False  # CLIENT CACHING given for the next command (or transaction)
        self.broken = False  # the redirect client was gone when a message was due
        self.prefixes: set[bytes] = set()


class Prefix:
    """A BCAST prefix: the keys modified under it this loop turn (-> who modified last) and its clients."""

    __slots__ = ("keys", "clients")

    def __init__(self) -> None:
        self.keys: dict[bytes, Client | None] = {}
        self.clients: dict[Client, None] = {}


def _id_order(client_id: int) -> bytes:
    # 7.0 keeps each key's client ids in a radix tree of their 8 bytes as the (little-endian) host stores them.
    return client_id.to_bytes(8, "little")


class Tracking:
    """The server's tracking state: 7.0's TrackingTable and PrefixTable, and each client's options."""

    def __init__(self, clients: Mapping[int, Client], redirect_before_reply: bool, overlap_then_ok: bool) -> None:
        self.clients = clients  # the server's connected clients by id
        self.table: dict[bytes, dict[int, None]] = {}  # key -> ids of the clients that may cache it
        self.prefixes: dict[bytes, Prefix] = {}
        self.options: dict[Client, ClientTracking] = {}  # the clients with tracking on
        # Messages held for a client whose command is running (or whose blocked command is being
        # served): those before its reply, those after it. And whether a BCAST round is due.
        self.held: dict[Client, tuple[list[Any], list[Any]]] = {}
        self.broadcast_due = False
        self.owed = False  # either: Core.execute calls finish()
        # Dialect.tracking_redirect_before_reply and tracking_overlap_then_ok: Valkey 9.1.2 (measured)
        # sends a message redirected to the running client after its reply, and answers overlapping
        # new prefixes with the error alone.
        self.redirect_before_reply = redirect_before_reply
        self.overlap_then_ok = overlap_then_ok

    # -- CLIENT TRACKING / CACHING ------------------------------------------------------------------
    def of(self, c: Client) -> ClientTracking:
        """The options of a tracking client."""
        return self.options[c]

    def enable(self, c: Client, redirect: int, bcast: bool, optin: bool, optout: bool, noloop: bool,
               prefixes: list[bytes]) -> None:
        """``enableTracking``: options replace the previous ones; BCAST prefixes add to the client's."""
        st = self.options.get(c)
        if st is None:
            st = self.options[c] = ClientTracking()
        c.tracking = True
        c.redirect = redirect
        st.broken = False
        st.bcast = bcast
        st.optin, st.optout, st.noloop = optin, optout, noloop
        if bcast:
            for prefix in prefixes or [b""]:
                p = self.prefixes.get(prefix)
                if p is None:
                    p = self.prefixes[prefix] = Prefix()
                p.clients[c] = None
                st.prefixes.add(prefix)

    def disable(self, c: Client) -> None:
        """``disableTracking``: flags and prefixes go; the client's ids stay in the table."""
        st = self.options.pop(c, None)
        c.tracking = False
        if st is None:
            return
        for prefix in st.prefixes:
            p = self.prefixes[prefix]
            del p.clients[c]
            if not p.clients:
                del self.prefixes[prefix]

    def overlap_error(self, c: Client, prefixes: list[bytes]) -> tuple[str | None, bool]:
        """``checkPrefixCollisionsOrReply``: the error text (or None) and whether tracking is still
        enabled. 7.0.15 (and 6.2.14) return the index of the first prefix of a colliding pair of new
        prefixes as the verdict, so a pair found from the second prefix on gives the error and then
        ``+OK``."""
        st = self.options.get(c)
        mine = sorted(st.prefixes) if st is not None else []
        for i, new in enumerate(prefixes):
            for old in mine:
                if new.startswith(old) or old.startswith(new):
                    return prefix_overlaps_existing(new, old), False
            for other in prefixes[i + 1:]:
                if new.startswith(other) or other.startswith(new):
                    return prefix_overlaps_provided(new, other), i > 0 and self.overlap_then_ok
        return None, True

    def hold(self, c: Client, item: Any, after: bool) -> None:
        """A message for the running client, sent just before (or after) its reply."""
        self._hold(c, item, after)

    def say_before_reply(self, c: Client, item: Reply) -> None:
        """Something the running client gets before its reply (7.0.15's stray second reply)."""
        self._hold(c, item, after=False)

    # -- reads -----------------------------------------------------------------------------------------
    def remember(self, c: Client, spec: CommandSpec, argv: list[bytes]) -> None:
        """``trackingRememberKeys`` after a read-only command of a tracking client not in BCAST mode."""
        st = self.options[c]
        if st.bcast or (st.optin and not st.caching) or (st.optout and st.caching):
            return
        for key in table.command_keys(spec, argv):
            ids = self.table.get(key)
            if ids is None:
                ids = self.table[key] = {}
            ids[c.id] = None

    # -- writes ----------------------------------------------------------------------------------------
    def invalidate(self, current: Client, key: bytes) -> None:
        """``trackingInvalidateKey`` from ``signalModifiedKey``: run by ``current``'s command."""
        if self.prefixes:
            for prefix, p in self.prefixes.items():
                if key.startswith(prefix):
                    p.keys[key] = current
            self._broadcast_soon()
        ids = self.table.pop(key, None)
        if not ids:
            return
        clients = self.clients
        for cid in sorted(ids, key=_id_order):
            target = clients.get(cid)
            if target is None:  # gone: 7.0 finds no client by that id
                continue
            st = self.options.get(target)
            if st is None or st.bcast or (st.noloop and target is current):
                continue
            # The running client's own keys: after its reply (7.0.15's tracking_pending_keys).
            self._send(target, Array((Bulk(key),)), current, after=target is current)

    def flushed(self, current: Client, before_reply: bool = False) -> None:
        """``trackingInvalidateKeysOnFlush``: every tracking client gets the null; the table empties.
        ``before_reply``: the running client's own null precedes its reply (TRACKING-DIALECT-1, 7.4)."""
        for c in list(self.clients.values()):  # 7.0 walks its client list: connection order
            if not c.tracking:
                continue
            if c is current and before_reply and not c.redirect:
                if c.proto == 3:
                    null: Any = FLUSHED[3]  # raw RESP, written as it is
                    self._hold(c, Push((INVALIDATE, null)), after=False)
                continue
            self._send(c, FLUSHED[c.proto], current, after=c is current)
        self.table.clear()

    def _send(self, c: Client, keys: Any, current: Client | None, after: bool = False) -> None:
        """``sendTrackingMessage``: ``keys`` (an array, or FLUSH*'s null) for tracking client ``c``."""
        to = c
        if c.redirect:
            redirected = self.clients.get(c.redirect)
            if redirected is None:
                self.options[c].broken = True
                if c.proto == 3:
                    self._emit(c, Push((REDIR_BROKEN, Int(c.redirect))), current, after)
                return
            to = redirected
        if to.proto == 3:
            self._emit(to, Push((INVALIDATE, keys)), current, after)
        elif to is not c and getattr(to, "pubsub", None) is not None:
            # TRACKING-5: a RESP2 redirect client in Pub/Sub mode gets a message on the invalidate channel
            self._emit(to, Push((MESSAGE, TRACKING_CHANNEL, keys)), current, after)

    def _emit(self, to: Client, push: Push, current: Client | None, after: bool) -> None:
        if to is current:
            self._hold(to, push, after or not self.redirect_before_reply)
        else:
            _write(to, [push])

    def _hold(self, c: Client, item: Any, after: bool) -> None:
        held = self.held.get(c)
        if held is None:
            held = self.held[c] = ([], [])
        held[after].append(item)
        self.owed = True

    # -- BCAST ----------------------------------------------------------------------------------------
    def _broadcast_soon(self) -> None:
        """Keys under a prefix go out once per loop turn (7.0's beforeSleep), after the replies."""
        if self.broadcast_due:
            return
        self.broadcast_due = True
        try:
            asyncio.get_running_loop().call_soon(self.broadcast, None)
        except RuntimeError:  # no event loop (the core driven directly): at the end of the command
            self.owed = True

    def broadcast(self, current: Client | None) -> None:
        """``trackingBroadcastInvalidationMessages``: per prefix in byte order, its keys to its clients."""
        self.broadcast_due = False
        if not self.options:
            return
        for prefix in sorted(self.prefixes):
            p = self.prefixes[prefix]
            if p.keys:
                keys = sorted(p.keys)
                for c in list(p.clients):
                    mine = keys
                    if self.options[c].noloop:
                        mine = [k for k in keys if p.keys[k] is not c]
                        if not mine:
                            continue
                    self._send(c, Array(tuple(Bulk(k) for k in mine)), current, after=True)
            p.keys = {}

    # -- after each command ----------------------------------------------------------------------------
    def finish(self, c: Client, result: Any) -> Any:
        """After a top-level command: CLIENT CACHING lapses, and the messages for ``c`` join its reply."""
        st = self.options.get(c)
        if st is not None and not c.in_multi and not c.last_cmd.startswith("client|"):
            st.caching = False  # resetClient: CACHING lasts for one command, or one transaction
        if not self.owed:
            return result
        self.owed = False
        if self.broadcast_due and not _loop_running():
            self.broadcast(c)
        held, self.held = self.held, {}
        for other, (before, after) in held.items():  # blocked clients served by this command
            if other is not c:
                _write(other, before + after)
        if c not in held:
            return result
        before, after = held[c]
        if result is None or result is POSTPONED:  # no reply now: the messages go out on their own
            _write(c, before + after)
            return result
        if type(result) is PreRendered:
            result = Raw(encode(result.reply))
        return Pushed(before, result, after)


def _write(to: Client, items: list[Any]) -> None:
    """Queue messages for a client now, in order with its replies (CLIENT REPLY OFF: 7.0 drops them)."""
    if to.conn is not None and to.reply_mode != "off" and items:
        out: list[bytes] = []
        for item in items:
            encode_into(item, to.proto, out)
        to.conn.write(out)
        observer = to.ctx.core.observer
        if observer is not None:  # --trace, --checked: push events
            for item in items:
                observer.pushed(to, item)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


