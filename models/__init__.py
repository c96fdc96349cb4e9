"""xspec.models: the executable state-machine model of Redis Streams (the oracle).

Importing the package registers every command family's handlers with the
dispatcher in :mod:`.server`.
"""

from xspec.models import admin, generic, groups, info, reads, streams, transactions  # noqa: F401
from xspec.models.clock import Clock, Duration, Instant, ManualClock
from xspec.models.server import Outcome, Server
from xspec.spec.dialect import DIALECTS, Dialect, get_dialect

__all__ = ["Clock", "Duration", "Instant", "ManualClock", "DIALECTS", "Dialect", "get_dialect", "Outcome", "Server"]
