"""Handlers of MULTI, EXEC, DISCARD, WATCH and UNWATCH (spec/rules/transactions.md).

Queuing itself is the dispatcher's job (``Server._execute``, DISPATCH-3..5):
these handlers only open, run, abort and discard a transaction and keep the
client's watched keys.
"""

from __future__ import annotations

from xspec.models.server import Call, CommandError, PreRendered, command
from xspec.models.state import Client
from xspec.spec import commands as table
from xspec.spec.errors import (
    DISCARD_WITHOUT_MULTI,
    EXEC_WITHOUT_MULTI,
    NESTED_MULTI,
    NOT_ALLOWED_IN_MULTI,
    WATCH_INSIDE_MULTI,
    command_not_allowed_in_multi,
)
from xspec.spec.resp import NULL_ARRAY, OK, Array, Error, Reply


def discard_transaction(c: Client) -> None:
    """``discardTransaction``: forget the queue and both dirty flags, unwatch everything."""
    c.in_multi = False
    c.multi_queue = []
    c.multi_error = False
    unwatch_all(c)


def unwatch_all(c: Client) -> None:
    """``unwatchAllKeys`` plus clearing CLIENT_DIRTY_CAS, as every caller does."""
    c.watched.clear()
    c.dirty_cas = False


def refuse_in_multi(call: Call) -> None:
    """MULTI-DIALECT-1: Valkey flags MULTI and WATCH "no-multi": the dispatcher
    refuses them inside a transaction, naming the command, and dooms it."""
    if call.server.dialect.multi_watch_are_no_multi:
        call.client.multi_error = True
        call.server.stats.refusing = True  # STATS-2: counted as a rejected call
        if not call.server.dialect.no_multi_error_names_command:  # MULTI-DIALECT-2
            raise CommandError(NOT_ALLOWED_IN_MULTI)
        raise CommandError(command_not_allowed_in_multi(call.spec.fullname))


@command("multi")
def multi(call: Call) -> Reply:
    c = call.client
    if c.in_multi:  # MULTI-2: an error reply that does not doom the transaction
        refuse_in_multi(call)
        raise CommandError(NESTED_MULTI)
    c.in_multi = True  # MULTI-1
    c.multi_used = True  # CLIENT-DIALECT-1: Valkey's CLIENT LIST multi= is 0, not -1, from now on
    return OK


@command("discard")
def discard(call: Call) -> Reply:
    c = call.client
    if not c.in_multi:  # DISCARD-1
        raise CommandError(DISCARD_WITHOUT_MULTI)
    discard_transaction(c)  # DISCARD-2
    return OK


@command("exec")
def exec_(call: Call) -> Reply | PreRendered:
    c = call.client
    if not c.in_multi:  # EXEC-1
        raise CommandError(EXEC_WITHOUT_MULTI)
    if c.multi_error:  # EXEC-2: a rejected command while queuing wins over a touched watch
        discard_transaction(c)
        return Error(table.EXECABORT)
    if c.dirty_cas:  # EXEC-3
        discard_transaction(c)
        return NULL_ARRAY
    # EXEC-4: unwatch before running, so the transaction's own writes do not
    # count against it; then run the queue in order.
    # The client stays in MULTI while the queue runs (CLIENT INFO inside
    # shows flags=x and the queue length).
    unwatch_all(c)
    replies = call.server.run_queued(c, call.ops)
    c.in_multi = False
    c.multi_error = False
    # EXEC-5: each reply is rendered in the protocol in force when it was made
    # (a queued HELLO switches the protocol half-way through the array).
    return PreRendered(Array(tuple(replies)))


@command("watch")
def watch(call: Call) -> Reply:
    c = call.client
    if c.in_multi:  # WATCH-2: an error reply that does not doom the transaction
        refuse_in_multi(call)
        raise CommandError(WATCH_INSIDE_MULTI)
    for key in call.argv[1:]:  # WATCH-1: the key in the client's current database
        c.watched.setdefault((c.db, key), None)
    return OK


@command("unwatch")
def unwatch(call: Call) -> Reply:
    unwatch_all(call.client)  # WATCH-6
    return OK
