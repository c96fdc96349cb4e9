"""streamworker: a small consumer-group worker for Redis Streams (the library the example tests).

A :class:`Worker` reads a stream as one consumer of a group, hands each entry
to a handler and acknowledges it when the handler returns. An entry whose
handler raised stays pending and is handed over again by :meth:`Worker.retry`;
entries another consumer left pending for longer than ``claim_idle_ms`` (it
crashed, or hangs) are taken over by :meth:`Worker.reclaim`. Delivery is at
least once: a handler may see an entry again, so it must be idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

Handler = Callable[[str, dict[str, str]], None]


def publish(client: redis.Redis, stream: str, fields: dict[str, str], maxlen: int | None = None) -> str:
    """Append an entry; returns its ID."""
    entry: dict[Any, Any] = dict(fields)  # redis-py's field types are wider than str
    return str(client.xadd(stream, entry, maxlen=maxlen, approximate=False))


class Worker:
    """One consumer of ``group`` on ``stream``."""

    def __init__(self, client: redis.Redis, stream: str, group: str, consumer: str, handler: Handler, *,
                 batch: int = 10, claim_idle_ms: int = 30_000) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.handler = handler
        self.batch = batch
        self.claim_idle_ms = claim_idle_ms

    def ensure_group(self) -> None:
        """Create the group (and the stream) if it does not exist yet; new entries only."""
        try:
            self.client.xgroup_create(self.stream, self.group, id="$", mkstream=True)
        except redis.ResponseError as e:
            if not str(e).startswith("BUSYGROUP"):
                raise

    def poll(self, block_ms: int | None = None) -> int:
        """Handle the entries no consumer has seen yet (waiting up to ``block_ms`` for some); how many succeeded."""
        reply = self.client.xreadgroup(self.group, self.consumer, {self.stream: ">"}, count=self.batch,
                                       block=block_ms)
        return self._handle(_entries(reply))

    def retry(self) -> int:
        """Hand this consumer's own pending entries to the handler again; how many succeeded."""
        reply = self.client.xreadgroup(self.group, self.consumer, {self.stream: "0"}, count=self.batch)
        return self._handle(_entries(reply))

    def reclaim(self) -> int:
        """Take over entries other consumers left pending for ``claim_idle_ms`` or more, and handle them."""
        _, claimed, *_ = self.client.xautoclaim(self.stream, self.group, self.consumer, self.claim_idle_ms,
                                                start_id="0-0", count=self.batch)
        return self._handle([(entry_id, fields) for entry_id, fields in claimed if fields is not None])

    def pending(self) -> int:
        """How many entries of the group are delivered and not acknowledged."""
        return int(self.client.xpending(self.stream, self.group)["pending"])

    def _handle(self, entries: list[tuple[str, dict[str, str]]]) -> int:
        done = 0
        for entry_id, fields in entries:
            try:
                self.handler(entry_id, fields)
            except Exception:  # the entry stays pending: retry() or another consumer's reclaim() gets it
                continue
            self.client.xack(self.stream, self.group, entry_id)
            done += 1
        return done


def _entries(reply: Any) -> list[tuple[str, dict[str, str]]]:
    """XREADGROUP's reply as (id, fields) pairs, deleted entries left out. redis-py gives RESP2's
    ``[[stream, entries], ...]`` and RESP3's ``{stream: [entries]}``."""
    if isinstance(reply, dict):
        batches = [entries for lists in reply.values() for entries in lists]
    else:
        batches = [entries for _, entries in reply or []]
    return [(entry_id, fields) for entries in batches for entry_id, fields in entries if fields is not None]
