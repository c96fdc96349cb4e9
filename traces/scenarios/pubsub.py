"""Pub/Sub: subscriptions and their confirmations, messages as ``push`` events, the RESP2 subscriber
context, RESP3 pushes, PUBSUB's introspection (spec/rules/pubsub.md).

A message is read with :func:`push` when the script knows one has been sent (a RESP2 message looks
like any reply, so only the script can tell); a command that confirms several channels gets one
``recv`` per confirmation.
"""

from __future__ import annotations

import time

from xspec.spec.resp import Push as PushReply
from xspec.spec.trace_format import Push, Recv
from xspec.traces.record.client import now_us
from xspec.traces.record.recorder import Arg, Recorder
from xspec.traces.scenarios.registry import topic

scenario = topic("pubsub")


def push(r: Recorder, c: int, timeout: float = 10.0) -> None:
    """Read client ``c``'s next message (nothing of it is outstanding) as a ``push`` event."""
    early = r.early.get(c)
    if early:
        reply, t = early.pop(0)
    else:
        reply = r.conn(c).recv(timeout)
        t = now_us()
    r.events.append(Push(c=c, reply=reply, t=t))


def read_resp3(r: Recorder, c: int, count: int) -> None:
    """Read ``count`` items of a RESP3 client: a push is a ``push`` event, anything else the reply
    to its oldest outstanding command (RESP3 tells them apart; the order is the server's)."""
    for _ in range(count):
        early = r.early.get(c)
        if early:
            reply, t = early.pop(0)
        else:
            reply = r.conn(c).recv(10.0)
            t = now_us()
        if isinstance(reply, PushReply):
            r.events.append(Push(c=c, reply=reply, t=t))
        else:
            r.pending[c] -= 1
            r.events.append(Recv(c=c, reply=reply, t=t))


def confirm(r: Recorder, c: int, *args: Arg, replies: int | None = None) -> None:
    """A (P|S)(UN)SUBSCRIBE and its confirmations: one per name, or ``replies`` of them."""
    r.send(c, *args)
    count = replies if replies is not None else max(len(args) - 1, 1)
    r.pending[c] += count - 1  # the recorder counts one reply per send
    for _ in range(count):
        r.recv(c)


@scenario("RESP2: SUBSCRIBE to two channels, messages as pushes, the subscriber context (PING, a refused GET), "
          "UNSUBSCRIBE of everything", tags=["resp2"])
def subscribe_resp2(r: Recorder) -> None:
    confirm(r, 1, "SUBSCRIBE", "news", "sport")  # PUBSUB-1, PUBSUB-2
    r.call(2, "PUBLISH", "news", "hello")  # PUBSUB-7
    push(r, 1)
    r.call(2, "PUBLISH", "weather", "rain")
    r.call(2, "PUBLISH", "sport", "goal")
    push(r, 1)
    r.send(1, "PING")  # PUBSUB-CTX-2
    r.recv(1)
    r.send(1, "PING", "hi")
    r.recv(1)
    r.send(1, "GET", "k")  # PUBSUB-CTX-1
    r.recv(1)
    confirm(r, 1, "SUBSCRIBE", "news")  # already subscribed: confirmed again, the count unchanged
    confirm(r, 1, "UNSUBSCRIBE", "news")  # PUBSUB-3
    confirm(r, 1, "UNSUBSCRIBE", "nothing")
    confirm(r, 1, "UNSUBSCRIBE", replies=1)  # PUBSUB-4: the last channel
    confirm(r, 1, "UNSUBSCRIBE", replies=1)  # PUBSUB-4: nothing left: a null channel
    r.call(1, "GET", "k")  # out of the subscriber context
    r.call(2, "PUBLISH", "news", "nobody")


@scenario("PSUBSCRIBE: a message matched by a channel and by patterns, PUNSUBSCRIBE of every pattern",
          tags=["resp2"])
def patterns(r: Recorder) -> None:
    confirm(r, 1, "PSUBSCRIBE", "news.*", "h?llo")  # PUBSUB-5
    confirm(r, 1, "SUBSCRIBE", "news.tech")  # the count holds channels and patterns
    r.call(2, "PUBLISH", "news.tech", "m1")  # PUBSUB-7: the channel's message, then the pattern's
    push(r, 1)
    push(r, 1)
    r.call(2, "PUBLISH", "hallo", "m2")
    push(r, 1)
    r.call(2, "PUBSUB", "NUMPAT")  # PUBSUB-9
    confirm(r, 1, "PUNSUBSCRIBE", replies=2)  # PUBSUB-5: the list, in order
    confirm(r, 1, "PUNSUBSCRIBE", replies=1)  # PUBSUB-4's null
    confirm(r, 1, "UNSUBSCRIBE", "news.tech")
    r.call(2, "PUBSUB", "NUMPAT")


@scenario("RESP3: confirmations and messages are pushes, any command runs while subscribed, the "
          "publisher receives its own message", tags=["resp3"])
def resp3_pushes(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(1, "SUBSCRIBE", "a")  # PUBSUB-2: a push
    r.call(1, "SET", "k", "v")  # PUBSUB-CTX-1 applies to RESP2 only
    r.call(1, "GET", "k")
    r.call(2, "PUBLISH", "a", "from-2")
    push(r, 1)
    r.send(1, "PUBLISH", "a", "to-myself")  # PUBSUB-7, PUBSUB-DIALECT-2: before or after its reply
    read_resp3(r, 1, 2)
    r.call(1, "PING")
    confirm(r, 1, "UNSUBSCRIBE", "a", "b")


@scenario("PUBSUB CHANNELS, NUMSUB, NUMPAT and HELP with several subscribers; their errors",
          tags=[])
def introspection(r: Recorder) -> None:
    confirm(r, 1, "SUBSCRIBE", "a1", "a2", "b")
    confirm(r, 2, "SUBSCRIBE", "a1")
    confirm(r, 3, "PSUBSCRIBE", "*", "a*")
    r.call(4, "PUBSUB", "CHANNELS")  # PUBSUB-9: any order
    r.call(4, "PUBSUB", "CHANNELS", "a*")
    r.call(4, "PUBSUB", "NUMSUB", "a1", "b", "zz", "a1")
    r.call(4, "PUBSUB", "NUMSUB")
    r.call(4, "PUBSUB", "NUMPAT")
    r.call(4, "PUBSUB", "HELP")  # PUBSUB-10
    r.call(4, "PUBSUB", "CHANNELS", "x", "y")  # PUBSUB-9
    r.call(4, "PUBSUB", "NUMPAT", "x")
    r.call(4, "PUBSUB", "NOPE")
    r.call(4, "PUBLISH", "a2", "m")  # one channel subscriber and two patterns
    push(r, 1)
    push(r, 3)
    push(r, 3)
    r.close(2)  # PUBSUB-CTX-3: a closed connection leaves its channels
    time.sleep(0.05)  # once the server has seen it close
    r.call(4, "PUBSUB", "NUMSUB", "a1")


@scenario("Sharded channels: SSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS/SHARDNUMSUB, SUNSUBSCRIBE; "
          "unknown commands where the dialect has none", tags=["shard"])
def shard_channels(r: Recorder) -> None:
    if not r.header.server_version.startswith("6."):
        confirm(r, 1, "SSUBSCRIBE", "s1", "s2")  # PUBSUB-6
        confirm(r, 1, "SUBSCRIBE", "s1")  # counted apart from the shard channels
        r.call(2, "SPUBLISH", "s1", "m")
        push(r, 1)
        r.call(2, "PUBLISH", "s1", "n")
        push(r, 1)
        r.call(2, "PUBSUB", "SHARDCHANNELS")
        r.call(2, "PUBSUB", "SHARDNUMSUB", "s1", "s3")
        confirm(r, 1, "SUNSUBSCRIBE", "s1")
        confirm(r, 1, "SUNSUBSCRIBE", replies=1)
        confirm(r, 1, "SUNSUBSCRIBE", replies=1)
        r.call(2, "MULTI")
        r.call(2, "SSUBSCRIBE", "s9")  # PUBSUB-12
        r.call(2, "EXEC")
    else:  # PUBSUB-DIALECT-1
        r.call(1, "SSUBSCRIBE", "s1")
        r.call(1, "SPUBLISH", "s1", "m")
        r.call(1, "PUBSUB", "SHARDCHANNELS")


@scenario("RESET and QUIT while subscribed; arity errors; PUBLISH inside MULTI/EXEC reaches a subscriber",
          tags=["resp2"])
def reset_and_errors(r: Recorder) -> None:
    r.call(1, "SUBSCRIBE")  # arity
    r.call(1, "PUBLISH", "a")
    confirm(r, 1, "SUBSCRIBE", "a")
    r.send(1, "RESET")  # PUBSUB-CTX-3: allowed, and leaves everything silently
    r.recv(1)
    r.call(1, "GET", "k")
    r.call(2, "PUBLISH", "a", "nobody")
    confirm(r, 3, "SUBSCRIBE", "a")
    r.call(2, "MULTI")
    r.call(2, "PUBLISH", "a", "in-exec")
    r.call(2, "SET", "k", "v")
    r.call(2, "EXEC")
    push(r, 3)
    r.call(2, "PUBSUB", "NUMSUB", "a")
    r.send(3, "QUIT")
    r.recv(3)
