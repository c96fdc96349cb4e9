"""CLIENT TRACKING (spec/rules/tracking.md): invalidation messages as ``push`` events, default mode,
OPTIN/OPTOUT with CLIENT CACHING, NOLOOP, BCAST with prefixes, REDIRECT (RESP3, and RESP2 through
``__redis__:invalidate``), a broken redirect, FLUSHALL's null, and the introspection subcommands.

A client that may get both a reply and a message for one command reads them with
:func:`~xspec.traces.scenarios.pubsub.read_resp3` (RESP3 tells them apart; the order is the server's).
"""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.pubsub import push, read_resp3
from xspec.traces.scenarios.registry import topic

scenario = topic("tracking")


def own(r: Recorder, c: int, *args: str, messages: int = 1) -> None:
    """Client ``c`` runs a command that also sends it ``messages`` messages."""
    r.send(c, *args)
    read_resp3(r, c, 1 + messages)


@scenario("Default mode (RESP3): a read remembers its keys, another client's write invalidates once, the "
          "client's own write, XREAD's keys, MULTI/EXEC, DEL and RENAME, FLUSHALL's null, TRACKINGINFO",
          tags=["resp3"])
def default_mode(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(1, "CLIENT", "TRACKING", "ON")  # TRACKING-1
    r.call(1, "GET", "k")  # TRACKING-2
    r.call(2, "SET", "k", "1")  # TRACKING-3
    push(r, 1)
    r.call(2, "SET", "k", "2")  # forgotten after one message
    r.call(1, "GET", "k")
    own(r, 1, "SET", "k", "3")  # its own write: told too
    r.call(1, "XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "0")
    r.call(2, "XADD", "s2", "1-1", "f", "v")
    push(r, 1)
    r.call(2, "MSET", "a", "1", "b", "1")
    r.call(1, "MGET", "a", "b", "c")
    r.call(2, "MULTI")
    r.call(2, "DEL", "a", "b")
    r.call(2, "RENAME", "s1", "c")  # no such key: nothing changes
    r.call(2, "EXEC")
    push(r, 1)
    push(r, 1)
    r.call(1, "EXISTS", "c")
    r.call(2, "SET", "c", "1")
    r.call(2, "RENAME", "c", "d")
    push(r, 1)
    r.call(1, "GET", "d")
    own(r, 1, "FLUSHALL")  # TRACKING-8: the null, to every tracking client
    r.call(2, "SET", "d", "1")  # the table is empty now
    own(r, 1, "FLUSHDB")  # every FLUSHDB too, with nothing remembered
    r.call(2, "FLUSHDB")
    push(r, 1)
    r.call(1, "CLIENT", "TRACKINGINFO")  # TRACKING-11
    r.call(1, "CLIENT", "GETREDIR")
    r.call(2, "CLIENT", "GETREDIR")
    r.call(2, "CLIENT", "TRACKINGINFO")
    r.call(1, "CLIENT", "TRACKING", "OFF")
    r.call(1, "CLIENT", "TRACKINGINFO")


@scenario("Turning tracking off keeps the keys read (TRACKING-4), NOLOOP, RESP2 without a redirect "
          "(never told), RESET", tags=["resp3", "resp2"])
def off_noloop_reset(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(3, "CLIENT", "TRACKING", "ON")  # RESP2, no REDIRECT
    r.call(3, "GET", "k")
    r.call(1, "CLIENT", "TRACKING", "ON")
    r.call(1, "GET", "lz")
    r.call(1, "CLIENT", "TRACKING", "OFF")
    r.call(2, "SET", "lz", "1")  # off: nothing, and the key is forgotten
    r.call(1, "CLIENT", "TRACKING", "ON")
    r.call(1, "GET", "lz")
    r.call(1, "CLIENT", "TRACKING", "OFF")
    r.call(1, "CLIENT", "TRACKING", "ON")
    r.call(2, "SET", "lz", "2")  # read before OFF, told after ON
    push(r, 1)
    r.call(2, "SET", "k", "1")
    r.call(1, "CLIENT", "TRACKING", "ON", "NOLOOP")  # TRACKING-3
    r.call(1, "GET", "n")
    r.call(1, "SET", "n", "1")  # NOLOOP: not told about its own write
    r.call(2, "SET", "n", "2")  # and the key was forgotten
    r.call(1, "GET", "n")
    r.call(2, "SET", "n", "3")
    push(r, 1)
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "GET", "z")
    r.call(1, "RESET")  # TRACKING-4: off
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "HELLO", "3")
    r.call(1, "CLIENT", "TRACKING", "ON")
    r.call(2, "SET", "z", "1")  # remembered across RESET
    push(r, 1)


@scenario("OPTIN and OPTOUT with CLIENT CACHING: for the next command or transaction only; the errors",
          tags=["resp3"])
def optin_optout(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(1, "CLIENT", "CACHING", "YES")  # TRACKING-9: not tracking
    r.call(1, "CLIENT", "TRACKING", "ON", "OPTIN")
    r.call(1, "CLIENT", "CACHING", "NO")
    r.call(1, "CLIENT", "CACHING", "maybe")
    r.call(1, "GET", "k1")  # not remembered
    r.call(2, "SET", "k1", "1")
    r.call(1, "CLIENT", "CACHING", "YES")
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "GET", "k2")  # remembered
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "GET", "k3")  # CACHING lapsed
    r.call(2, "SET", "k2", "1")
    push(r, 1)
    r.call(2, "SET", "k3", "1")
    r.call(1, "CLIENT", "CACHING", "YES")
    r.call(1, "PING")  # uses it up
    r.call(1, "GET", "k4")
    r.call(2, "SET", "k4", "1")
    r.call(1, "CLIENT", "CACHING", "YES")
    r.call(1, "MULTI")
    r.call(1, "GET", "k5")
    r.call(1, "GET", "k6")
    r.call(1, "EXEC")  # the whole transaction
    r.call(1, "GET", "k7")
    r.call(2, "SET", "k5", "1")
    push(r, 1)
    r.call(2, "SET", "k6", "1")
    push(r, 1)
    r.call(2, "SET", "k7", "1")
    r.call(1, "CLIENT", "TRACKING", "ON", "OPTOUT")  # TRACKING-1: no switching
    r.call(1, "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")
    r.call(1, "CLIENT", "TRACKING", "OFF")
    r.call(1, "CLIENT", "TRACKING", "ON", "OPTOUT")
    r.call(1, "CLIENT", "CACHING", "YES")
    r.call(1, "CLIENT", "CACHING", "NO")
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(1, "GET", "o1")  # not remembered
    r.call(1, "GET", "o2")  # remembered
    r.call(2, "SET", "o1", "1")
    r.call(2, "SET", "o2", "1")
    push(r, 1)


@scenario("BCAST with prefixes: the option errors, overlapping prefixes, every key under a prefix once per "
          "command in byte order, NOLOOP, no prefix means every key", tags=["resp3"])
def bcast(r: Recorder) -> None:
    r.call(1, "HELLO", "3")
    r.call(3, "HELLO", "3")
    for options in (("BCAST", "PREFIX", "a", "PREFIX", "ab"), ("PREFIX", "a"), ("BCAST", "OPTIN"),
                    ("BCAST", "OPTOUT"), ("OPTIN", "OPTOUT"), ("REDIRECT", "0"), ("REDIRECT", "x"),
                    ("NOLOOP", "FOO"), ("PREFIX",)):
        r.call(1, "CLIENT", "TRACKING", "ON", *options)  # TRACKING-1, TRACKING-7
    r.call(1, "CLIENT", "TRACKING", "MAYBE", "BCAST")
    r.call(1, "CLIENT", "TRACKING", "OFF", "PREFIX", "a")
    r.call(1, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "q")
    r.call(1, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "abc")  # overlaps one it has
    r.call(1, "CLIENT", "TRACKING", "ON")  # BCAST cannot be switched off this way
    r.call(1, "CLIENT", "TRACKINGINFO")
    r.call(3, "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP")  # every key
    r.call(2, "SET", "ab", "1")
    push(r, 1)
    push(r, 3)
    r.call(2, "SET", "c", "1")
    push(r, 3)
    r.call(2, "MSET", "ac", "1", "ab", "1", "q1", "1", "zz", "1")
    push(r, 1)  # prefix a
    push(r, 1)  # prefix q
    push(r, 3)
    own(r, 1, "SET", "ab", "2")  # its own write: told
    push(r, 3)
    r.call(3, "SET", "x1", "1")  # NOLOOP: not to itself
    r.call(1, "GET", "ab")  # BCAST remembers nothing
    r.call(1, "CLIENT", "TRACKING", "OFF")
    r.call(2, "SET", "ab", "3")
    push(r, 3)
