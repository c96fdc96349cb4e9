"""Key expiry (spec/rules/expiry.md): the EXPIRE family, TTL and its kin, PERSIST.

A key's expiry time lives in its database's ``expires`` table
(:class:`xspec.models.state.Keyspace`), as an absolute :class:`Instant`. A key
whose time has passed is deleted when a command looks it up (lazy expiry,
``Server.expire_if_needed``) or by the active expiry cycle, an internal step of
the model (``Server.active_expire``); until then it still counts in DBSIZE and
INFO's keyspace line. The commands here look their keys up themselves, at the
point Redis does (``SELF_EXPIRING``).
"""

from __future__ import annotations

from xspec.models.clock import Duration, Instant
from xspec.models.notify import notify_keyspace_event, notify_server_event
from xspec.models.server import SELF_EXPIRING, Call, CommandError, Server, command
from xspec.models.state import Keyspace, Value
from xspec.spec import commands as table
from xspec.spec.ids import I64_MAX, I64_MIN, c_string, parse_ll
from xspec.spec.resp import Int, Reply

_EXPIRE_COMMANDS = ("expire", "pexpire", "expireat", "pexpireat")


def _notify_expired(server: Server, dbid: int, key: bytes) -> None:
    """The ``expired`` event of a key that lazy or active expiry deleted (NOTIFY-1)."""
    notify_server_event(server, "x", "expired", key, dbid)


Server.expired_hook = _notify_expired  # called by Server.expire_if_needed
SELF_EXPIRING.update(_EXPIRE_COMMANDS + ("ttl", "pttl", "expiretime", "pexpiretime", "persist"))


class CountBetween(Int):
    """A count the active expiry cycle may have lowered: equal to any integer reply from ``low`` to
    ``value`` (EXPIRE-ACTIVE-1). Its wire value is ``value``, the count without active expiry."""

    __slots__ = ("low",)
    low: int

    def __init__(self, low: int, value: int) -> None:
        super().__init__(value)
        object.__setattr__(self, "low", low)

    def __eq__(self, other: object) -> bool:
        return type(other) is Int and isinstance(other.value, int) and self.low <= other.value <= self.value

    def __hash__(self) -> int:
        return hash(self.value)


def key_count(call: Call) -> Reply:
    """DBSIZE's count: every stored key; any count down to the keys not expired when some have (EXPIRE-ACTIVE-1)."""
    n = len(call.db)
    if call.server.active_expiry_steps:  # EXPIRE-ACTIVE-2: the checker takes the deletions as steps
        return Int(n)
    if call.client.id == 0:  # a script's client (models/scripting.py): a Lua value is one count, every key stored
        return Int(n)
    expires = getattr(call.db, "expires", None)
    if expires:
        due = sum(1 for key in expires if call.server.key_is_expired(call.client.db, key))
        if due:
            return CountBetween(n - due, n)
    return Int(n)


def notify_past_expiry(call: Call, key: bytes) -> None:
    """The event of a key deleted because the time given was already past (NOTIFY-1, EXPIRE-DIALECT-2)."""
    if call.server.dialect.past_expiry_notifies_expired:
        notify_keyspace_event(call, "x", "expired", key)
    else:
        notify_keyspace_event(call, "g", "del", key)


def keyspace(call: Call) -> Keyspace:
    """The command's database with its expiry table."""
    db = call.db
    if not isinstance(db, Keyspace):
        db = call.db = call.server.keyspace(call.client.db)
    return db


def lookup(call: Call, key: bytes) -> Value | None:
    """``lookupKey``: lazy expiry of ``key`` (EXPIRE-LAZY-1), then its value or None."""
    db = call.db
    expires = getattr(db, "expires", None)
    if expires and key in expires:
        call.expire_if_needed(key)
    return db.get(key)


def invalid_expire_time(call: Call) -> str:
    """``addReplyErrorExpireTime``'s text, naming the command (EXPIRE-2; 6.2 words it its own way)."""
    name = call.spec.fullname
    if call.server.dialect.set_invalid_expire_error.endswith("command"):
        return f"ERR invalid expire time in '{name}' command"
    return f"ERR invalid expire time in {name}"  # EXPIRE-DIALECT-1


def set_expire(call: Call, key: bytes, when: Instant) -> None:
    """``setExpire``: ``key`` (which exists) expires at ``when``."""
    keyspace(call).expires[key] = when


def remove_expire(call: Call, key: bytes) -> bool:
    """``removeExpire``: whether the key had a time."""
    return keyspace(call).expires.pop(key, None) is not None


def get_expire(call: Call, key: bytes) -> Instant | None:
    return keyspace(call).expires.get(key)


def seconds_rounded(ms: Duration) -> int:
    """``(ttl + 500) / 1000`` of a non-negative duration, by comparisons only (a symbolic time has no value)."""
    if type(ms) is int:
        return (ms + 500) // 1000
    low, high = 0, I64_MAX // 1000
    while low < high:  # the largest s with s * 1000 - 500 <= ms
        mid = (low + high + 1) // 2
        if ms >= Duration(mid * 1000 - 500):
            low = mid
        else:
            high = mid - 1
    return low


def seconds_rounded_at(t: Instant) -> int:
    """``(t + 500) / 1000`` of a non-negative instant (EXPIRETIME, TTL-3), by comparisons only."""
    if type(t) is int:
        return (t + 500) // 1000
    low, high = 0, I64_MAX // 1000
    while low < high:  # the largest s with s * 1000 - 500 <= t
        mid = (low + high + 1) // 2
        if t >= Instant(mid * 1000 - 500):
            low = mid
        else:
            high = mid - 1
    return low


# -- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT -------------------------------------------------------
def _expire_flags(call: Call) -> set[bytes]:
    """``parseExtendedExpireArgumentsOrReply`` (EXPIRE-3): NX, XX, GT, LT in any order."""
    flags: set[bytes] = set()
    for arg in call.argv[3:]:
        word = c_string(arg).lower()
        if word not in (b"nx", b"xx", b"gt", b"lt"):
            raise CommandError(f"ERR Unsupported option {c_string(arg).decode('latin-1')}")
        flags.add(word)
    if b"nx" in flags and flags & {b"xx", b"gt", b"lt"}:
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if b"gt" in flags and b"lt" in flags:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    return flags


def _expire_generic(call: Call, relative: bool, seconds: bool) -> Reply:
    key = call.argv[1]
    flags = _expire_flags(call)  # EXPIRE-3
    amount = parse_ll(call.argv[2])
    if amount is None:  # EXPIRE-1
        raise CommandError(table.NOT_INTEGER)
    if seconds:
        if amount > I64_MAX // 1000 or amount < -(-I64_MIN // 1000):  # EXPIRE-2
            raise CommandError(invalid_expire_time(call))
        amount *= 1000
    if relative:
        base = call.now()
        if base + Duration(amount) > Instant(I64_MAX):  # EXPIRE-2: when > LLONG_MAX - basetime
            raise CommandError(invalid_expire_time(call))
        when = base + Duration(amount)
    else:
        if amount > I64_MAX:  # EXPIRE-2 (cannot happen: basetime is 0)
            raise CommandError(invalid_expire_time(call))
        when = Instant(amount)
    if lookup(call, key) is None:  # EXPIRE-4
        return Int(0)
    if flags:  # EXPIRE-5
        current = get_expire(call, key)
        if b"nx" in flags and current is not None:
            return Int(0)
        if b"xx" in flags and current is None:
            return Int(0)
        if b"gt" in flags and (current is None or when <= current):
            return Int(0)
        if b"lt" in flags and current is not None and when >= current:
            return Int(0)
    if when <= call.now():  # EXPIRE-6: already in the past: the key is deleted
        old = call.db.pop(key)
        call.deleted(key, old)
        notify_past_expiry(call, key)
        call.changed()
        call.propagate([call.server.deletion_word("lazyfree-lazy-expire"), key])
        return Int(1)
    set_expire(call, key, when)  # EXPIRE-7
    call.modified(key)
    notify_keyspace_event(call, "g", "expire", key)  # NOTIFY-1
    call.changed()
    if call.spec.fullname == "pexpireat" or call.server.dialect.set_expiry_propagation == "px":
        call.propagate_verbatim()  # EXPIRE-8; EXPIRE-DIALECT-1: 6.2 sends every one as typed
    else:
        call.propagate([b"PEXPIREAT", key, Instant.propagated_ms(when), *call.argv[3:]])
    return Int(1)


@command("expire")
def expire(call: Call) -> Reply:
    return _expire_generic(call, relative=True, seconds=True)


@command("pexpire")
def pexpire(call: Call) -> Reply:
    return _expire_generic(call, relative=True, seconds=False)


@command("expireat")
def expireat(call: Call) -> Reply:
    return _expire_generic(call, relative=False, seconds=True)


@command("pexpireat")
def pexpireat(call: Call) -> Reply:
    return _expire_generic(call, relative=False, seconds=False)


# -- TTL, PTTL, EXPIRETIME, PEXPIRETIME -----------------------------------------------------------
def _ttl_generic(call: Call, output_ms: bool, absolute: bool) -> Reply:
    key = call.argv[1]
    if lookup(call, key) is None:  # TTL-1
        return Int(-2)
    when = get_expire(call, key)
    if when is None:  # TTL-2
        return Int(-1)
    if absolute:  # TTL-3
        return Int(Instant.reply_ms(when) if output_ms else seconds_rounded_at(when))
    ttl = when - call.now()
    if ttl < Duration(0):
        ttl = Duration(0)
    return Int(Duration.reply_ms(ttl) if output_ms else seconds_rounded(ttl))  # TTL-3


@command("ttl")
def ttl(call: Call) -> Reply:
    return _ttl_generic(call, output_ms=False, absolute=False)


@command("pttl")
def pttl(call: Call) -> Reply:
    return _ttl_generic(call, output_ms=True, absolute=False)


@command("expiretime")
def expiretime(call: Call) -> Reply:
    return _ttl_generic(call, output_ms=False, absolute=True)


@command("pexpiretime")
def pexpiretime(call: Call) -> Reply:
    return _ttl_generic(call, output_ms=True, absolute=True)


# -- PERSIST --------------------------------------------------------------------------------------
@command("persist")
def persist(call: Call) -> Reply:
    key = call.argv[1]
    if lookup(call, key) is None or not remove_expire(call, key):  # PERSIST-1
        return Int(0)
    call.modified(key)  # PERSIST-2
    notify_keyspace_event(call, "g", "persist", key)  # NOTIFY-1
    call.changed()
    call.propagate_verbatim()
    return Int(1)
