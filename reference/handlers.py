"""The command handlers a core runs: the generic commands and the stream commands, per dialect.

The core (``reference.core``) knows no handler module; this module, above both
the core and the command modules, puts the table together and builds cores
that run it (:func:`new_core`), so that every module of the server imports
only modules below it.
"""

from __future__ import annotations

from typing import Any

from xspec.reference.aof import add_persistence
from xspec.reference.bitfield import HANDLERS as BITFIELD_COMMANDS
from xspec.reference.core import Core, Handler
from xspec.reference.dump import HANDLERS as DUMP_COMMANDS
from xspec.reference.expiry import HANDLERS as EXPIRY_COMMANDS
from xspec.reference.functions import HANDLERS as FUNCTION_COMMANDS
from xspec.reference.generic import HANDLERS as GENERIC
from xspec.reference.generic import dialect_handlers
from xspec.reference.hashes import HANDLERS as HASH_COMMANDS
from xspec.reference.list_positions import HANDLERS as LIST_POSITION_COMMANDS
from xspec.reference.lists import HANDLERS as LIST_COMMANDS
from xspec.reference.pubsub import add_pubsub
from xspec.reference.replication import add_replication
from xspec.reference.scripting import HANDLERS as SCRIPT_COMMANDS
from xspec.reference.set_operations import HANDLERS as SET_OPERATION_COMMANDS
from xspec.reference.sets import HANDLERS as SET_COMMANDS
from xspec.reference.sort import HANDLERS as SORT_COMMANDS
from xspec.reference.strings import HANDLERS as STRING_COMMANDS
from xspec.reference.xcommands import HANDLERS as STREAM_COMMANDS
from xspec.reference.zsets import HANDLERS as ZSET_COMMANDS
from xspec.spec.dialect import Dialect


def load_handlers(dialect: Dialect) -> dict[str, Handler]:
    """The generic handlers and the stream module's, with the generic handlers that differ in
    ``dialect`` in place of 7.0's."""
    handlers: dict[str, Handler] = dict(GENERIC)
    handlers.update(STREAM_COMMANDS)
    handlers.update(DUMP_COMMANDS)
    handlers.update(LIST_COMMANDS)
    handlers.update(LIST_POSITION_COMMANDS)
    handlers.update(SET_COMMANDS)
    handlers.update(SET_OPERATION_COMMANDS)
    handlers.update(ZSET_COMMANDS)
    handlers.update(BITFIELD_COMMANDS)
    handlers.update(SORT_COMMANDS)
    handlers.update(FUNCTION_COMMANDS)
    handlers.update(SCRIPT_COMMANDS)
    handlers.update(STRING_COMMANDS)
    handlers.update(HASH_COMMANDS)
    handlers.update(EXPIRY_COMMANDS)
    handlers.update(dialect_handlers(dialect))
    add_pubsub(handlers)
    add_persistence(handlers)
    add_replication(handlers)
    return handlers


def new_core(**options: Any) -> Core:
    """A core running every command of the server; ``options`` are :class:`Core`'s
    (``dialect``, ``clock``, ``requirepass``, ``config``, ``enable_debug``, ``port``)."""
    return Core(handlers=load_handlers, **options)
