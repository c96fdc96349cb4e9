"""Keyspace notifications (spec/rules/notify.md) as Redis's notify.c sends them.

``notify-keyspace-events`` is parsed by :func:`parse_setting` into the classes it enables (``A``
spelt out); CONFIG GET shows :func:`shown` of them, which prints ``A`` and hides ``n`` behind it, as
``keyspaceEventsFlagsToString`` does. The classes in force live in ``Core.notify_events``.

:func:`notify_keyspace_event` is called by the command handlers where Redis calls
``notifyKeyspaceEvent``; each event is published on ``__keyspace@<db>__:<key>`` (payload the event)
and ``__keyevent@<db>__:<event>`` (payload the key), as K and E ask (NOTIFY-1). A message for the
running client itself is held and joins its reply as a PUBLISH's own message does
(PUBSUB-DIALECT-2: before it in 6.2 and 7.0, after it in 7.2+ and Valkey).
"""

from __future__ import annotations

from typing import Any

from xspec.reference.pubsub import publish_message
from xspec.spec.resp import Reply

SETTING = "notify-keyspace-events"
_EVERY = "g$lshzxetd"  # what A stands for
_ORDER = "g$lshzxetdn"  # the classes in the order CONFIG GET prints them
_TAIL = "KEm"


def parse_setting(value: bytes, has_new: bool) -> str:
    """``keyspaceEventsStringToFlags``: the enabled classes, spelt out; ValueError for a letter that is
    no class (NOTIFY-2; NOTIFY-DIALECT-1: 6.2 has no ``n``)."""
    classes: set[str] = set()
    for ch in value.split(b"\0", 1)[0].decode("latin-1"):
        if ch == "A":
            classes.update(_EVERY)
        elif ch in _EVERY or ch in _TAIL or (ch == "n" and has_new):
            classes.add(ch)
        else:
            raise ValueError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return "".join(ch for ch in _ORDER + _TAIL if ch in classes)


def shown(classes: str) -> str:
    """``keyspaceEventsFlagsToString`` (NOTIFY-2)."""
    head = "A" if all(ch in classes for ch in _EVERY) else "".join(ch for ch in _ORDER if ch in classes)
    return head + "".join(ch for ch in _TAIL if ch in classes)


def notify_keyspace_event(ctx: Any, kind: str, event: str, key: bytes) -> None:
    """``notifyKeyspaceEvent(kind, event, key, the client's db)`` from a handler (NOTIFY-1)."""
    core = ctx.core
    if getattr(core, "notify_events", None):  # a core stand-in may have no setting at all
        notify_core_event(core, kind, event, key, ctx.client.db, ctx.client)


def notify_new(ctx: Any, key: bytes) -> None:
    """``dbAdd``'s ``new`` (NOTIFY-3); 6.2 has none (NOTIFY-DIALECT-1: its setting never holds ``n``)."""
    core = ctx.core
    if "n" in getattr(core, "notify_events", ()):
        notify_core_event(core, "n", "new", key, ctx.client.db, ctx.client)


def notify_core_event(core: Any, kind: str, event: str, key: bytes, db: int, current: Any = None) -> None:
    """An event, with or without a running client (active expiry passes none)."""
    classes = core.notify_events
    if kind not in classes:
        return
    own: list[Reply] = []
    name = event.encode()
    if "K" in classes:
        publish_message(core.pubsub, b"__keyspace@%d__:%s" % (db, key), name, current, own)
    if "E" in classes:
        publish_message(core.pubsub, b"__keyevent@%d__:%s" % (db, name), key, current, own)
    if own:
        after = core.dialect.name not in ("redis-6.2", "redis-7.0")  # PUBSUB-DIALECT-2
        for message in own:
            core.tracking.hold(current, message, after)
