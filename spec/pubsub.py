"""The wire vocabulary of Pub/Sub (spec/rules/pubsub.md): message kinds, the commands a RESP2
subscriber may still send, the error for any other, and PUBSUB HELP's text.

Shared by the model (models/pubsub.py) and the reference server (reference/pubsub.py).
"""

from __future__ import annotations

from xspec.spec.commands import rejected_text

# The first element of every confirmation and message (PUBSUB-2, PUBSUB-5, PUBSUB-9).
SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE = b"subscribe", b"psubscribe", b"ssubscribe"
UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE = b"unsubscribe", b"punsubscribe", b"sunsubscribe"
MESSAGE, PMESSAGE, SMESSAGE = b"message", b"pmessage", b"smessage"

# The commands whose reply is one confirmation per channel or pattern (several replies to one
# command): the trace format writes one ``recv`` for each (spec/trace-format.md, version 2).
CONFIRMING = frozenset({"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"})

# PUBSUB-CTX-1: what a RESP2 client with a subscription may still run (7.0's processCommand).
SUBSCRIBER_COMMANDS = frozenset({"ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe",
                                 "psubscribe", "punsubscribe", "quit", "reset"})


def subscriber_context_error(fullname: str, sharded: bool) -> str:
    """PUBSUB-CTX-1: the error for any other command; ``sharded``: the dialect has SSUBSCRIBE
    (7.0+ writes ``(P|S)``, 6.2 ``(P)``)."""
    family = "(P|S)" if sharded else "(P)"
    return rejected_text(
        f"ERR Can't execute '{fullname}': only {family}SUBSCRIBE / {family}UNSUBSCRIBE / PING / QUIT / RESET "
        "are allowed in this context".encode("utf-8", "surrogateescape"))


def pubsub_help(sharded: bool, last_line: str) -> tuple[str, ...]:
    """PUBSUB HELP's lines (``addReplyHelp``: a header, the subcommands, then HELP)."""
    lines = [
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
    ]
    if sharded:
        lines += [
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ]
    return (*lines, "HELP", last_line)
