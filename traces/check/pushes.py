"""What the checker needs for Pub/Sub traces (spec/trace-format.md, version 2's ``push`` events).

* A one-node trace/2 whose only version-2 events are ``push`` es is checked by the single-server
  search (:func:`single_node_view`): it is a trace/1 history with messages in it.
* A (P|S)SUBSCRIBE or (P|S)UNSUBSCRIBE answers one ``recv`` per confirmation: the search takes
  them together, as one reply, the array of them (:func:`confirmations`), which is how the model
  answers such a command (models/pubsub.py).
* The n-th message the model sends a client is the n-th ``push`` event of that client: compared
  when the model sends it, and a ``push`` event is reached only once the model has sent it (the
  search runs commands until it has). A message may not be received before the command that
  sent it was sent, and the model may not send one the trace never shows while the client still
  has events after it.
"""

from __future__ import annotations

from dataclasses import replace

from xspec.spec.pubsub import CONFIRMING
from xspec.spec.resp import Array, Bulk, Int, Push, Reply
from xspec.spec.trace_format import V2_ONLY_EVENTS, Recv, Trace
from xspec.spec.trace_format import Push as PushEvent


def single_node_view(trace: Trace) -> Trace | None:
    """``trace`` as a one-server history, when it is a trace/2 with one node whose only version-2
    events are pushes and that has at least one; otherwise None (the deployment's checker's)."""
    nodes = trace.header.nodes
    if nodes is None or len(nodes) != 1:
        return None
    pushes = False
    for e in trace.events:
        if isinstance(e, PushEvent):
            pushes = True
        elif isinstance(e, V2_ONLY_EVENTS):
            return None
    if not pushes:
        return None
    spec = next(iter(nodes.values()))
    header = replace(trace.header, server_name=spec.server_name, server_version=spec.server_version,
                     config=dict(spec.config), nodes=None)
    return Trace(header, trace.events, trace.path)


def _kind(reply: Reply) -> bytes | None:
    """The first element of a confirmation (``subscribe``, ``unsubscribe``...), None for another reply."""
    if isinstance(reply, Array | Push) and reply.items and isinstance(reply.items[0], Bulk):
        return reply.items[0].value
    return None


def confirmation_count(argv: list[bytes]) -> int | None:
    """How many ``recv`` s a confirming command gets: one per channel it names, 0 for "every
    following confirmation of its kind" (an UNSUBSCRIBE of everything); None for another command."""
    name = argv[0].decode("latin-1").lower() if argv else ""
    if name not in CONFIRMING:
        return None
    return len(argv) - 1


def more_confirmations(trace: Trace, after: int, client: int, argv: list[bytes]) -> bool:
    """Whether the client's next ``recv`` after event ``after`` is another confirmation of the
    UNSUBSCRIBE of everything ``argv`` is: one of its kind that names a channel and counts one
    subscription fewer than the confirmation at ``after`` (each leaves exactly one)."""
    name = argv[0].lower()
    last = trace.events[after]
    before = _left(last.reply) if isinstance(last, Recv) else None
    for e in trace.events[after + 1:]:
        if isinstance(e, Recv) and e.c == client:
            items = _items(e.reply)
            return _kind(e.reply) == name and before is not None and _left(e.reply) == before - 1 \
                and len(items) == 3 and isinstance(items[1], Bulk)
    return False


def _items(reply: Reply) -> tuple[Reply, ...]:
    return reply.items if isinstance(reply, Array | Push) else ()


def _left(reply: Reply) -> int | None:
    """The count a confirmation carries (None when it has none)."""
    items = _items(reply)
    if len(items) == 3:
        count = items[2]
        if isinstance(count, Int) and isinstance(count.value, int):
            return count.value
    return None


def combined(replies: list[Reply]) -> Reply:
    """The replies of one confirming command as the model gives them: one as it is, several as an array."""
    return replies[0] if len(replies) == 1 else Array(tuple(replies))
