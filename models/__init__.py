"""xspec.models: the executable state-machine model of Redis Streams (the oracle).

Importing the package registers every command family's handlers with the
dispatcher in :mod:`.server`.
"""

from xspec.models import (  # noqa: F401  # noqa: F401
    admin,
    bitfield,
    clients,
    command,
    debug,
    debug_persistence,  # noqa: F401  # after debug: DEBUG RELOAD in front of its DEBUG
    dump,  # noqa: F401
    expiry,
    functions,
    generic,
    groups,
    hashes,
    info,
    list_positions,
    lists,
    pubsub,
    reads,
    replication,  # noqa: F401
    scripting,
    set_operations,
    sets,
    sort,
    streams,
    strings,
    tracking,
    transactions,
    zsets,
)
from xspec.models.clock import Clock, Duration, Instant, ManualClock
from xspec.models.server import Outcome, Server
from xspec.spec.dialect import DIALECTS, Dialect, get_dialect

__all__ = ["Clock", "Duration", "Instant", "ManualClock", "DIALECTS", "Dialect", "get_dialect", "Outcome", "Server"]
