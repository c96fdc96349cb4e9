"""INFO's lifetime counters after CONFIG RESETSTAT: commandstats, errorstats, total_error_replies
(spec/rules/stats.md). The dirty counter's field shows too; a trace cannot know its start (STATS-0),
so it stays free."""

from __future__ import annotations

from xspec.traces.record.recorder import Recorder
from xspec.traces.scenarios.helpers import block
from xspec.traces.scenarios.registry import topic

scenario = topic("stats")


def _counters(r: Recorder, c: int = 1) -> None:
    r.call(c, "INFO", "commandstats")
    r.call(c, "INFO", "errorstats")
    r.call(c, "INFO", "stats")


@scenario("Errors of every kind counted by code; calls, rejected and failed calls per command",
          tags=["stats"])
def errors_and_calls(r: Recorder) -> None:
    r.call(1, "CONFIG", "RESETSTAT")  # CONFIG-9, STATS-0
    r.call(1, "NOSUCH", "x")  # STATS-1: rejected, no command to count it under
    r.call(1, "GET")  # STATS-2: a rejected call
    r.call(1, "XADD", "s", "1-1", "f", "v")
    r.call(1, "XADD", "s", "1-1", "f", "v")  # STATS-2: a failed call
    r.call(1, "LPUSH", "s", "x")  # STATS-1: WRONGTYPE
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")
    r.call(1, "XGROUP", "CREATE", "s", "g", "0")  # BUSYGROUP
    r.call(1, "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">")  # NOGROUP
    r.call(1, "XGROUP", "NOSUCH", "s", "g")  # an unknown subcommand: no command
    r.call(1, "INFO", "persistence")
    _counters(r)
    r.call(1, "CONFIG", "RESETSTAT")
    _counters(r)


@scenario("MULTI/EXEC: errors inside EXEC's reply, a rejected command's EXECABORT, nested MULTI",
          tags=["stats", "transactions"])
def transactions(r: Recorder) -> None:
    r.call(1, "CONFIG", "RESETSTAT")
    r.call(1, "MULTI")
    r.call(1, "SET", "a", "1")
    r.call(1, "LPUSH", "a", "x")  # STATS-2: WRONGTYPE inside EXEC fails LPUSH
    r.call(1, "XADD", "s", "bad", "f", "v")
    r.call(1, "EXEC")  # STATS-2: EXEC itself is not failed
    r.call(1, "MULTI")
    r.call(1, "MULTI")  # nested (Valkey: refused by the dispatcher)
    r.call(1, "GET")  # rejected while queuing
    r.call(1, "EXEC")  # EXECABORT: a failed EXEC
    r.call(1, "EXEC")  # without MULTI
    r.call(1, "DISCARD")
    _counters(r)


@scenario("Blocked clients: errors served to them are counted, a timeout is none", tags=["stats", "blocking",
                                                                                         "lists", "xreadgroup"])
def blocked(r: Recorder) -> None:
    # Commandstats stay out of this one: a live replay asks CLIENT LIST whether a client blocked, which
    # counts too (tests/test_stats.py covers when a blocked command counts, STATS-DIALECT-7).
    r.call(2, "PING")
    r.call(1, "CONFIG", "RESETSTAT")
    block(r, 2, "BLPOP", "q", "0")
    r.call(1, "RPUSH", "q", "1", "2")
    r.recv(2)
    r.call(1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block(r, 2, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    r.call(1, "XGROUP", "DESTROY", "s", "g")  # STATS-3: NOGROUP, an error served to the blocked client
    r.recv(2)
    block(r, 2, "BRPOP", "q2", "0.3")
    r.recv(2)  # a timeout is no error
    r.call(1, "INFO", "errorstats")
    r.call(1, "INFO", "stats")
