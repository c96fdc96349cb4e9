"""A client session that makes a server send messages of its own: Pub/Sub messages, keyspace
notifications and a CLIENT TRACKING invalidation (for the tests of ``serve --trace`` and ``xspec record``)."""

from __future__ import annotations

import time

import redis


def messages(p: redis.client.PubSub, want: int) -> list[dict[str, object]]:
    got: list[dict[str, object]] = []
    deadline = time.monotonic() + 5
    while len(got) < want and time.monotonic() < deadline:
        m = p.get_message(timeout=0.2)
        if m is not None and m["type"] in ("message", "pmessage"):
            got.append(m)
    return got


def session(port: int, proto: int) -> int:
    """Subscribe to two channels and the keyspace events, publish and write, then track a key;
    returns how many messages the clients received that answer no command of theirs."""
    r = redis.Redis(port=port, protocol=proto)
    r.config_set("notify-keyspace-events", "KEA")
    p = r.pubsub()
    p.subscribe("a", "b")
    p.psubscribe("__keyspace@0__:*")
    r.publish("a", "hello")
    r.publish("nobody-listens", "x")
    r.set("k", "v")
    r.xadd("s", {"f": "v"})
    received = len(messages(p, 3))  # the message, and SET's and XADD's keyspace events
    p.unsubscribe()
    p.punsubscribe()
    time.sleep(0.1)
    p.close()
    tracker = redis.Redis(port=port, protocol=3)
    tracker.execute_command("CLIENT", "TRACKING", "ON")
    tracker.get("k")
    r.set("k", "w")  # an invalidation for the tracker
    tracker.ping()
    tracker.close()
    r.close()
    return received + 1
