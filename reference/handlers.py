"""The command handlers a core runs: the generic commands and the stream commands, per dialect.

The core (``reference.core``) knows no handler module; this module, above both
the core and the command modules, puts the table together and builds cores
that run it (:func:`new_core`), so that every module of the server imports
only modules below it.
"""

from __future__ import annotations

from typing import Any

from xspec.reference.aof import add_persistence
from xspec.reference.core import Core, Handler
from xspec.reference.dump import HANDLERS as DUMP_COMMANDS
from xspec.reference.functions import HANDLERS as FUNCTION_COMMANDS
from xspec.reference.generic import HANDLERS as GENERIC
from xspec.reference.generic import dialect_handlers
from xspec.reference.lists import HANDLERS as LIST_COMMANDS
from xspec.reference.pubsub import add_pubsub
from xspec.reference.sets import HANDLERS as SET_COMMANDS
from xspec.reference.xcommands import HANDLERS as STREAM_COMMANDS
from xspec.spec.dialect import Dialect


def load_handlers(dialect: Dialect) -> dict[str, Handler]:
    """The generic handlers and the stream module's, with the generic handlers that differ in
    ``dialect`` in place of 7.0's."""
    handlers: dict[str, Handler] = dict(GENERIC)
    handlers.update(STREAM_COMMANDS)
    handlers.update(DUMP_COMMANDS)
    handlers.update(LIST_COMMANDS)
    handlers.update(SET_COMMANDS)
    handlers.update(FUNCTION_COMMANDS)
    handlers.update(dialect_handlers(dialect))
    add_pubsub(handlers)
    add_persistence(handlers)
    return handlers


def new_core(**options: Any) -> Core:
    """A core running every command of the server; ``options`` are :class:`Core`'s
    (``dialect``, ``clock``, ``requirepass``, ``config``, ``enable_debug``, ``port``)."""
    return Core(handlers=load_handlers, **options)
