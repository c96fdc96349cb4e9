"""Messages the server sends clients without a request of their own: how Pub/Sub delivers them
(spec/rules/pubsub.md), shared by PUBLISH (models/pubsub.py), keyspace notifications
(models/notify.py) and CLIENT TRACKING's invalidations (models/tracking.py).

A message goes to :attr:`Server.pushes` as ``(client id, reply)``, rendered for the receiving
client's protocol, and ``Client.pushes_sent`` counts them, so a checker can pair the n-th message
of a client with the n-th ``push`` event of a trace.
"""

from __future__ import annotations

from collections.abc import Iterable

from xspec.models.server import Server
from xspec.models.state import Client
from xspec.spec.glob import pattern_matches
from xspec.spec.pubsub import MESSAGE, PMESSAGE
from xspec.spec.resp import Bulk, Push, Reply, for_protocol


def hash_order(server: Server, items: Iterable[bytes]) -> list[bytes]:
    """The order of a walk over a hash table with a random seed: any, so the model asks its chooser."""
    rest = list(items)
    if len(rest) < 2 or server.chooser is None:
        return rest
    out: list[bytes] = []
    while rest:
        out.append(rest.pop(server.chooser(len(rest)) if len(rest) > 1 else 0))
    return out


def send_push(server: Server, c: Client, message: Reply) -> None:
    """A message for ``c`` (PUBSUB-7): after every reply it was sent before, rendered for its protocol."""
    c.pushes_sent += 1
    server.pushes += ((c.id, for_protocol(message, c.proto)),)


def subscribers(server: Server, table: str, name: bytes) -> list[Client]:
    return [c for c in server.clients.values() if name in getattr(c, table)]


def publish_message(server: Server, channel: bytes, payload: bytes) -> int:
    """``pubsubPublishMessage``: the message to the channel's and the matching patterns' subscribers;
    how many received it (PUBLISH, keyspace notifications)."""
    receivers = 0
    for c in subscribers(server, "channels", channel):  # PUBSUB-7: the channel's subscribers first
        send_push(server, c, Push((Bulk(MESSAGE), Bulk(channel), Bulk(payload))))
        receivers += 1
    patterns: dict[bytes, None] = {}
    for c in server.clients.values():
        patterns.update(c.patterns)
    for pattern in hash_order(server, (p for p in patterns if pattern_matches(p, channel))):
        for c in subscribers(server, "patterns", pattern):  # PUBSUB-7: then each matching pattern's
            send_push(server, c, Push((Bulk(PMESSAGE), Bulk(pattern), Bulk(channel), Bulk(payload))))
            receivers += 1
    return receivers
