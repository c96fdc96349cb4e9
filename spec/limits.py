"""Caps and defaults that shape replies: counts a command uses when none is given, and the bounds it enforces.

Each is Redis's constant of the same meaning (named in the comment); the
rules that use it are cited beside it.
"""

from __future__ import annotations

from xspec.spec.ids import I64_MAX

NUM_DATABASES = 16  # the "databases" config default: SELECT and SWAPDB take 0..15 (SELECT-1)

# STREAM_LISTPACK_MAX_SIZE: the most field and value bytes one entry may carry (XADD-16), and the
# byte limit of a node when stream-node-max-bytes is 0 or larger
LISTPACK_MAX_SIZE = 1 << 30

# ~ trimming without LIMIT (XTRIM-7): the work limit is stream-node-max-entries times the factor;
# where the dialect bounds it, a limit <= 0 becomes APPROX_LIMIT_WHEN_UNSET and none exceeds the cap
DEFAULT_APPROX_LIMIT_FACTOR = 100
APPROX_LIMIT_WHEN_UNSET = 10_000
APPROX_LIMIT_CAP = 1_000_000

BLOCKED_DEFAULT_COUNT = 1000  # XREAD_BLOCKED_DEFAULT_COUNT: a blocked XREAD's COUNT when none was given
FULL_DEFAULT_COUNT = 10  # XINFO STREAM FULL's COUNT when none is given

# XAUTOCLAIM: COUNT's default, how many PEL entries it may look at per COUNT, and COUNT's cap, so
# that COUNT * 16 (the bytes of one ID) cannot overflow (XAUTOCLAIM-3)
AUTOCLAIM_DEFAULT_COUNT = 100
AUTOCLAIM_ATTEMPTS_FACTOR = 10
AUTOCLAIM_MAX_COUNT = I64_MAX // 16
