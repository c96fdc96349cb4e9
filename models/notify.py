"""Keyspace notifications (spec/rules/notify.md): ``notify-keyspace-events`` and the events it sends.

A handler calls :func:`notify_keyspace_event` where Redis calls ``notifyKeyspaceEvent``, after the
change; :func:`notify_new` where a key is created (``dbAdd``). When the event's class is enabled the
event goes out through Pub/Sub (models/pubsub.py) as up to two messages: on
``__keyspace@<db>__:<key>`` with the event as payload (class ``K``), then on
``__keyevent@<db>__:<event>`` with the key as payload (class ``E``) (NOTIFY-1).

The setting is kept in ``Server.config`` as the letters of its classes, ``A`` spelt out, so that a
class ``A`` does not hide (``n`` stays known though CONFIG GET prints ``AKE`` for ``AKEn``,
NOTIFY-2); :func:`shown` gives CONFIG GET's text.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from xspec.models.messages import publish_message
from xspec.spec.dialect import Dialect

if TYPE_CHECKING:
    from xspec.models.server import Call, Server

SETTING = "notify-keyspace-events"
# The classes ``A`` stands for, in the order CONFIG GET prints them (``n`` and ``m`` are not in it).
_ALL = "g$lshzxetd"
_PRINTED = "g$lshzxetdn"
# NOTIFY-5: ``m`` is kept and printed, but no read sends ``keymiss`` (not modelled).
_SWITCHES = "KEm"
# CONFIG SET's reason for a letter that is no class (7.0+; 6.2 gives none: CONFIG-DIALECT-1).
INVALID_CLASS = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def known_letters(dialect: Dialect) -> str:
    """The letters ``keyspaceEventsStringToFlags`` takes (NOTIFY-DIALECT-1: 6.2 has no ``n``)."""
    return "A" + _ALL + "KEm" + ("n" if dialect.keyspace_new_events else "")


def parse(value: bytes, dialect: Dialect) -> str | None:
    """The setting's stored form (its class letters, ``A`` spelt out, in print order), or None
    when a letter is not a class (NOTIFY-2)."""
    letters = known_letters(dialect)
    text = value.split(b"\0", 1)[0].decode("latin-1")  # a C string ends at its first NUL
    chosen: set[str] = set()
    for ch in text:
        if ch not in letters:
            return None
        chosen.update(_ALL if ch == "A" else ch)
    return "".join(ch for ch in _PRINTED + _SWITCHES if ch in chosen)


def shown(stored: str) -> str:
    """``keyspaceEventsFlagsToString``: ``A`` for every class it stands for, else each class; then K, E, m."""
    classes = "A" if all(ch in stored for ch in _ALL) else "".join(ch for ch in _PRINTED if ch in stored)
    return classes + "".join(ch for ch in _SWITCHES if ch in stored)


@lru_cache(maxsize=64)
def _enabled(stored: str) -> frozenset[str]:
    return frozenset(stored)


def notify_keyspace_event(call: Call, kind: str, event: str, key: bytes) -> None:
    """``notifyKeyspaceEvent(kind, event, key, the call's db)`` (NOTIFY-1)."""
    notify_server_event(call.server, kind, event, key, call.client.db)


def notify_new(call: Call, key: bytes) -> None:
    """``dbAdd``'s ``new`` event for a key just created (NOTIFY-3; NOTIFY-DIALECT-1: not in 6.2)."""
    if call.server.dialect.keyspace_new_events:
        notify_server_event(call.server, "n", "new", key, call.client.db)


def notify_server_event(server: Server, kind: str, event: str, key: bytes, db: int) -> None:
    """An event outside a handler's call (active expiry), or from one: its messages (NOTIFY-1)."""
    stored = server.config.get(SETTING)
    if not stored:
        return
    enabled = _enabled(stored)
    if kind not in enabled:
        return
    prefix = b"__key%s@%d__:"
    if "K" in enabled:
        publish_message(server, prefix % (b"space", db) + key, event.encode())
    if "E" in enabled:
        publish_message(server, prefix % (b"event", db) + event.encode(), key)
