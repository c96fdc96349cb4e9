"""Error replies, word for word, grouped by command family.

The texts both the model and the reference server send. The unknown-command
and arity texts and the few errors shared by most commands (WRONGTYPE, syntax
error, not an integer ...) are in :mod:`xspec.spec.commands`. A text that
embeds an argument is a function of the argument as the client sent it
(bytes); it renders the argument with :func:`error_text`, as Redis's
``addReplyErrorFormat`` shows a ``%s``, decoded as a client decodes an error
line (UTF-8, surrogate escapes for other bytes) so that it goes out byte for
byte. Where the dialects word a text differently, the function takes the
dialect's switch as a parameter.
"""

from __future__ import annotations

from xspec.spec.ids import c_string


def c_text(arg: bytes, limit: int | None = None) -> str:
    """An argument as C's ``%s`` (or ``%.Ns``, ``limit`` bytes at most) prints it: up to the first NUL."""
    s = c_string(arg)
    if limit is not None:
        s = s[:limit]
    return s.decode("utf-8", "surrogateescape")


def error_text(arg: bytes, limit: int | None = None) -> str:
    """An argument as a ``%s`` (or ``%.Ns``) in an error shows it: cut at a NUL (and after
    ``limit`` bytes), CR and LF made spaces, as ``addReplyErrorFormat`` keeps the error on one line."""
    s = c_string(arg)
    if limit is not None:
        s = s[:limit]
    return s.decode("utf-8", "surrogateescape").replace("\r", " ").replace("\n", " ")


def unknown_subcommand(sub: bytes, container: str) -> str:
    """A container called with a subcommand it does not have, at most 128 bytes of it shown (DISPATCH-1)."""
    return f"ERR unknown subcommand '{error_text(sub, 128)}'. Try {container.upper()} HELP."


def subcommand_syntax(sub: bytes, container: bytes, subcommand_table: bool) -> str:
    """``addReplySubcommandSyntaxError``: the subcommand as typed (at most 128 bytes), the container
    in capitals (XGROUP-2); 6.2, without a subcommand table, capitalises "Unknown" (DISPATCH-DIALECT-1)."""
    word = "unknown" if subcommand_table else "Unknown"
    return (f"ERR {word} subcommand or wrong number of arguments for '{error_text(sub, 128)}'. "
            f"Try {error_text(container).upper()} HELP.")


# -- connections: authentication, names, databases (spec/rules/server.md, generic.md) --
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."
PROTO_NOT_INTEGER = "ERR Protocol version is not an integer or out of range"
NOPROTO = "NOPROTO unsupported protocol version"
AUTH_WITHOUT_PASSWORD = ("ERR AUTH <password> called without any password configured for the default user. "
                         "Are you sure your configuration is correct?")
INVALID_CLIENT_ID = "ERR Invalid client ID"
DB_OUT_OF_RANGE = "ERR DB index is out of range"
INT_OUT_OF_RANGE = "ERR value is out of range, value must between -2147483648 and 2147483647"
INVALID_FIRST_DB = "ERR invalid first DB index"
INVALID_SECOND_DB = "ERR invalid second DB index"
INVALID_CURSOR = "ERR invalid cursor"
SCAN_NOVALUES = "ERR NOVALUES option can only be used in HSCAN"  # SCAN-DIALECT-1
SCAN_NOSCORES = "ERR NOSCORES option can only be used in ZSCAN"


def unknown_type_name(name: bytes) -> str:
    """Valkey's SCAN with a TYPE it does not know (SCAN-DIALECT-1)."""
    return f"ERR unknown type name '{error_text(name)}'"


def hello_bad_option(option: bytes) -> str:
    """An option HELLO does not take, or one without its arguments (HELLO-3)."""
    return f"ERR Syntax error in HELLO option '{error_text(option)}'"


def hello_noauth(auth_form: str) -> str:
    """HELLO from a connection that has not authenticated (HELLO-8); ``auth_form`` is the dialect's
    spelling of HELLO's AUTH option (``Dialect.hello_auth_form``)."""
    return (f"NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            f"{auth_form} option can be used to authenticate the client and select the RESP protocol "
            f"version at the same time")


def unknown_client_type(kind: bytes) -> str:
    """CLIENT LIST TYPE (CLIENT-8) or a CLIENT KILL/LIST filter naming a type no client has."""
    return f"ERR Unknown client type '{error_text(kind)}'"


def no_such_user(user: bytes) -> str:
    """A CLIENT KILL or CLIENT LIST filter ``USER`` naming a user other than ``default``."""
    return f"ERR No such user '{error_text(user)}'"


def client_filter_not_integer(what: str) -> str:
    """A CLIENT KILL/LIST filter whose value is not an integer; ``what`` names the value."""
    return f"ERR {what} is not an integer or out of range"


def client_filter_out_of_range(what: str, low: int, high: int) -> str:
    """A CLIENT KILL/LIST filter whose integer is outside ``low``..``high``."""
    return f"ERR {what} number should be between {low} and {high}"


def client_filter_not_positive(what: str) -> str:
    """A CLIENT KILL/LIST filter whose integer must be positive."""
    return f"ERR {what} should be greater than 0"


def client_filter_unknown_letters(what: str, where: str, letters: bytes) -> str:
    """Valkey's CLIENT LIST FLAGS/CAPA filters: a letter that names no ``what`` (flag, capability)."""
    return f"ERR Unknown {what} found in {where}: {error_text(letters)}"


def client_unrecognized_option(option: bytes) -> str:
    """CLIENT SETINFO with an attribute other than LIB-NAME and LIB-VER."""
    return f"ERR Unrecognized option '{error_text(option)}'"


def client_info_bad_characters(attribute: str) -> str:
    """CLIENT SETINFO with a value holding a byte outside ``!``..``~``; ``attribute`` in lower case."""
    return f"ERR {attribute} cannot contain spaces, newlines or special characters."


def prefix_overlaps_existing(new: bytes, old: bytes) -> str:
    """CLIENT TRACKING ... BCAST PREFIX: a new prefix and one the client already tracks overlap."""
    return (f"ERR Prefix '{error_text(new)}' overlaps with an existing prefix '{error_text(old)}'. "
            "Prefixes for a single client must not overlap.")


def prefix_overlaps_provided(new: bytes, other: bytes) -> str:
    """CLIENT TRACKING ... BCAST PREFIX: two prefixes of the same call overlap."""
    return (f"ERR Prefix '{error_text(new)}' overlaps with another provided prefix '{error_text(other)}'. "
            "Prefixes for a single client must not overlap.")

# -- malformed requests: the reason after "ERR Protocol error: " (the reference's request parser) --
PROTOCOL_ERROR = "ERR Protocol error: "
PROTO_TOO_BIG_MBULK = "too big mbulk count string"
PROTO_TOO_BIG_BULK = "too big bulk count string"
PROTO_TOO_BIG_INLINE = "too big inline request"
PROTO_INVALID_MBULK = "invalid multibulk length"
PROTO_UNAUTHENTICATED_MBULK = "unauthenticated multibulk length"
PROTO_INVALID_BULK = "invalid bulk length"
PROTO_UNAUTHENTICATED_BULK = "unauthenticated bulk length"
PROTO_UNBALANCED_QUOTES = "unbalanced quotes in request"


def proto_expected_dollar(got: bytes) -> str:
    """A multibulk argument that does not start with ``$``: ``got`` is the byte found there
    (``%c``); a CR or LF shows as a space, so the error stays on one line."""
    return f"expected '$', got '{error_text(got)}'"


# -- MULTI, EXEC, DISCARD, WATCH (spec/rules/transactions.md) ------------------------------
NESTED_MULTI = "ERR MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
WATCH_INSIDE_MULTI = "ERR WATCH inside MULTI is not allowed"
NOT_ALLOWED_IN_MULTI = "ERR Command not allowed inside a transaction"


def command_not_allowed_in_multi(name: str) -> str:
    """A "no-multi" command named in MULTI, in the dialects whose refusal names it (MULTI-DIALECT-1)."""
    return f"ERR Command '{name}' not allowed inside a transaction"


def exec_aborted(error: str) -> str:
    """EXEC refused by the dispatcher: its own error, without the ``ERR`` code, as the reason (EXEC-6)."""
    return f"EXECABORT Transaction discarded because of: {error.removeprefix('ERR ')}"

# -- CONFIG SET: the reason after "... - " (spec/rules/generic.md CONFIG-7) ----------------
CONFIG_RANGE = "argument must be between {} and {} inclusive"  # the bounds, low then high
CONFIG_NOT_INTEGER = "argument couldn't be parsed into an integer"
CONFIG_NOT_MEMORY = "argument must be a memory value"
CONFIG_DUPLICATE = "duplicate parameter"
CONFIG_IMMUTABLE = "can't set immutable config"


def config_unknown_parameter(name: bytes) -> str:
    """CONFIG SET of a parameter that does not exist, the name as typed (CONFIG-5)."""
    return f"ERR Unknown option or number of arguments for CONFIG SET - '{error_text(name)}'"


def config_set_failed(name: bytes, reason: str) -> str:
    """CONFIG SET refused for ``name``: a repeated name, as typed (:data:`CONFIG_DUPLICATE`, CONFIG-6);
    a parameter that cannot change at run time, as typed (:data:`CONFIG_IMMUTABLE`); a value that
    does not parse, the parameter named as the server spells it, in lower case (CONFIG-7)."""
    return f"ERR CONFIG SET failed (possibly related to argument '{error_text(name)}') - {reason}"


def config_unsupported_parameter(name: bytes) -> str:
    """6.2's CONFIG SET of a parameter it does not know or cannot set (CONFIG-DIALECT-1)."""
    return f"ERR Unsupported CONFIG parameter: {error_text(name)}"


def config_invalid_argument(value: bytes, name: bytes, reason: str) -> str:
    """6.2's CONFIG SET of a value that does not parse (CONFIG-DIALECT-1)."""
    return f"ERR Invalid argument '{error_text(value)}' for CONFIG SET '{error_text(name)}' - {reason}"

# -- XADD, XTRIM, XSETID (spec/rules/streams.md) -------------------------------------------
ERR_STRATEGIES = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
ERR_MAXLEN_NEGATIVE = "ERR The MAXLEN argument must be >= 0."
ERR_LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
ERR_LIMIT_NO_STRATEGY = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
ERR_XTRIM_NO_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"
ERR_LIMIT_NOT_APPROX = "ERR syntax error, LIMIT cannot be used without the special ~ option"
ERR_ID_ZERO = "ERR The ID specified in XADD must be greater than 0-0"
ERR_EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
ERR_ID_NOT_ABOVE_TOP = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
ERR_TOO_LARGE = "ERR Elements are too large to be stored"
ERR_ENTRIES_ADDED_NEGATIVE = "ERR entries_added must be positive"
ERR_SETID_BELOW_MAXDELETED = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
ERR_SETID_BELOW_TOP = "ERR The ID specified in XSETID is smaller than the target stream top item"
ERR_SETID_ENTRIES_ADDED = "ERR The entries_added specified in XSETID is smaller than the target stream length"
ERR_SETID_BELOW_CURRENT_MAXDELETED = "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
ERR_XADD_ARITY = "ERR wrong number of arguments for XADD"

# -- XRANGE, XREVRANGE, XPENDING, XAUTOCLAIM intervals (spec/rules/streams.md ID-*) ------
ERR_START_INTERVAL = "ERR invalid start ID for the interval"
ERR_END_INTERVAL = "ERR invalid end ID for the interval"

# -- XGROUP (spec/rules/groups.md) ---------------------------------------------------------
KEY_REQUIRED = ("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you "
                "may want to use the MKSTREAM option to create an empty stream automatically.")
BUSYGROUP = "BUSYGROUP Consumer Group name already exists"
ENTRIESREAD_RANGE = "ERR value for ENTRIESREAD must be positive or -1"


def no_such_key_or_group(key: bytes, group: bytes) -> str:
    """A missing key or consumer group for XPENDING (XPENDING-6), XCLAIM (XCLAIM-1) and
    XAUTOCLAIM (XAUTOCLAIM-4)."""
    return f"NOGROUP No such key '{error_text(key)}' or consumer group '{error_text(group)}'"


def no_such_group_for_key(group: bytes, key: bytes) -> str:
    """A missing consumer group of an existing stream: XGROUP (XGROUP-5), XINFO CONSUMERS (XINFO-7)."""
    return f"NOGROUP No such consumer group '{error_text(group)}' for key name '{error_text(key)}'"

# -- XCLAIM, XAUTOCLAIM (spec/rules/groups.md) ---------------------------------------------
XCLAIM_BAD_MIN_IDLE = "ERR Invalid min-idle-time argument for XCLAIM"
XCLAIM_BAD_IDLE = "ERR Invalid IDLE option argument for XCLAIM"
XCLAIM_BAD_TIME = "ERR Invalid TIME option argument for XCLAIM"
XCLAIM_BAD_RETRYCOUNT = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
XAUTOCLAIM_BAD_MIN_IDLE = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
XAUTOCLAIM_COUNT_NOT_POSITIVE = "ERR COUNT must be > 0"


def xclaim_unrecognized_option(option: bytes) -> str:
    """An XCLAIM option it does not know, or one without its value (XCLAIM-5)."""
    return f"ERR Unrecognized XCLAIM option '{error_text(option)}'"

# -- XREAD, XREADGROUP and blocking (spec/rules/reads.md) ----------------------------------
UNBALANCED = ("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be "
              "specified.")


def unbalanced_streams(grouped: bool, names_command: bool) -> str:
    """An odd number of arguments after STREAMS (XREAD-4): 7.0 words XREAD and XREADGROUP alike
    (:data:`UNBALANCED`); with ``Dialect.unbalanced_names_command`` the text names the command and
    its special ID (XREAD-DIALECT-1)."""
    if not names_command:
        return UNBALANCED
    command, special = ("xreadgroup", ">") if grouped else ("xread", "$")
    return (f"ERR Unbalanced '{command}' list of streams: for each stream key an ID or '{special}' "
            "must be specified.")
GROUP_IN_XREAD = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
NOACK_IN_XREAD = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
MISSING_GROUP = "ERR Missing GROUP option for XREADGROUP"
TIMEOUT_NOT_INTEGER = "ERR timeout is not an integer or out of range"
TIMEOUT_NEGATIVE = "ERR timeout is negative"
TIMEOUT_OUT_OF_RANGE = "ERR timeout is out of range"
DOLLAR_IN_XREADGROUP = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would "
    "just return an empty result set.")
PLUS_IN_XREADGROUP = DOLLAR_IN_XREADGROUP.replace("$", "+")
PLUS_AT_ZERO_LAST_ID = "ERR the stream last element ID is 0-0"
GT_IN_XREAD = ("ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
               "<group> <consumer> option.")
UNBLOCKED_KEY_GONE = "UNBLOCKED the stream key no longer exists"
UNBLOCKED_GROUP_GONE = "NOGROUP the consumer group this client was blocked on no longer exists"


def no_such_key_or_group_in_xreadgroup(key: bytes, group: bytes) -> str:
    """XREADGROUP on a missing key, or a stream without the group (XREADGROUP-2)."""
    return (f"NOGROUP No such key '{error_text(key)}' or consumer group '{error_text(group)}' "
            "in XREADGROUP with GROUP option")

# DUMP and RESTORE (spec/rules/dump.md)
DUMP_PAYLOAD_WRONG = "ERR DUMP payload version or checksum are wrong"
BAD_DATA_FORMAT = "ERR Bad data format"
BUSYKEY = "BUSYKEY Target key name already exists."
INVALID_TTL = "ERR Invalid TTL value, must be >= 0"
INVALID_IDLETIME = "ERR Invalid IDLETIME value, must be >= 0"
INVALID_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"

# Lists, sets and functions (spec/rules/lists.md, sets.md, functions.md)
COUNT_NOT_POSITIVE = "ERR value is out of range, must be positive"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
FUNCTION_FLUSH_SYNTAX = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"

# DISPATCH-9: DEBUG refused while ``enable-debug-command`` does not allow it (7.0+).
DEBUG_NOT_ALLOWED = (
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it "
    "from a local connection, otherwise you need to set this option in the configuration file, and then "
    "restart the server.")
