"""HELP replies: the lines each container command's HELP subcommand prints.

CLIENT, CONFIG and COMMAND keep their lines after the header as one text
(``addReplyHelp`` prints the header, then the lines, the last of them replaced
by the dialect's closing line, HELP-DIALECT-1); XGROUP's lines include the
header, XINFO's do not. Texts are those of Redis 7.0.15 unless the name says
otherwise (``_62``: Redis 6.2.14, ``_VALKEY``: Valkey 9.1.2).
"""

from __future__ import annotations

# XINFO HELP's lines after the header (XINFO-1).
XINFO_HELP = (
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
)

# XGROUP HELP's lines, its header first.
XGROUP_HELP = (
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
)

# XGROUP-DIALECT-2: 6.2's help has no ENTRIESREAD, and DESTROY's line holds its description.
XGROUP_HELP_62 = (
    *XGROUP_HELP[:5],
    *XGROUP_HELP[7:11],
    "DESTROY <key> <groupname>    Remove the specified group.",
    "SETID <key> <groupname> <id|$>",
    "    Set the current group ID.",
    *XGROUP_HELP[-2:],
)

# CLIENT HELP's and CONFIG HELP's lines after the header (CLIENT-11, CONFIG-10).
CLIENT_HELP = """
CACHING (YES|NO)
    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.
GETREDIR
    Return the client ID we are redirecting to when tracking is enabled.
GETNAME
    Return the name of the current connection.
ID
    Return the ID of the current connection.
INFO
    Return information about the current client connection.
KILL <ip:port>
    Kill connection made from <ip:port>.
KILL <option> <value> [<option> <value> [...]]
    Kill connections. Options are:
    * ADDR (<ip:port>|<unixsocket>:0)
      Kill connections made from the specified address
    * LADDR (<ip:port>|<unixsocket>:0)
      Kill connections made to specified local address
    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)
      Kill connections by type.
    * USER <username>
      Kill connections authenticated by <username>.
    * SKIPME (YES|NO)
      Skip killing current connection (default: yes).
LIST [options ...]
    Return information about client connections. Options:
    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)
      Return clients of specified type.
UNPAUSE
    Stop the current client pause, resuming traffic.
PAUSE <timeout> [WRITE|ALL]
    Suspend all, or just write, clients for <timeout> milliseconds.
REPLY (ON|OFF|SKIP)
    Control the replies sent to the current connection.
SETNAME <name>
    Assign the name <name> to the current connection.
UNBLOCK <clientid> [TIMEOUT|ERROR]
    Unblock the specified blocked client.
TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]
         [OPTIN] [OPTOUT] [NOLOOP]
    Control server assisted client side caching.
TRACKINGINFO
    Report tracking status for the current connection.
NO-EVICT (ON|OFF)
    Protect current client connection from eviction.
HELP
    Prints this help.
"""
CONFIG_HELP = """
GET <pattern>
    Return parameters matching the glob-like <pattern> and their values.
SET <directive> <value>
    Set the configuration <directive> to <value>.
RESETSTAT
    Reset statistics reported by the INFO command.
REWRITE
    Rewrite the configuration file.
HELP
    Prints this help.
"""

# CLIENT HELP's lines after the header as the real 6.2.14 and Valkey 9.1.2 answer them: 6.2's
# are 7.0's without NO-EVICT, with three lines worded otherwise.
CLIENT_HELP_62 = (CLIENT_HELP.replace("(NORMAL|MASTER|REPLICA|PUBSUB)", "(normal|master|replica|pubsub)", 1)
                   .replace("<timeout> milliseconds", "<timout> milliseconds")
                   .replace("[OPTIN] [OPTOUT] [NOLOOP]", "[OPTIN] [OPTOUT]")
                   .replace("NO-EVICT (ON|OFF)\n    Protect current client connection from eviction.\n", ""))
CLIENT_HELP_VALKEY = """
CACHING (YES|NO)
    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.
CAPA <option> [options...]
    The client claims its some capability options. Options are:
    * REDIRECT
      The client can handle redirection during primary and replica failover in standalone mode.
GETREDIR
    Return the client ID we are redirecting to when tracking is enabled.
GETNAME
    Return the name of the current connection.
ID
    Return the ID of the current connection.
INFO
    Return information about the current client connection.
KILL <ip:port>
    Kill connection made from <ip:port>.
KILL <option> <value> [<option> <value> [...]]
    Kill connections. Options are:
    * ADDR (<ip:port>|<unixsocket>:0)
      Kill connections made from the specified address.
    * LADDR (<ip:port>|<unixsocket>:0)
      Kill connections made to the specified local address.
    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)
      Kill connections by type.
    * USER <username>
      Kill connections authenticated by <username>.
    * SKIPME (YES|NO)
      Skip killing current connection (default: yes).
    * ID <client-id> [<client-id>...]
      Kill connections by client IDs.
    * MAXAGE <maxage>
      Kill connections older than the specified age.
    * FLAGS <flags>
      Kill connections that include the specified flags.
    * NAME <client-name>
      Kill connections with the specified name.
    * IDLE <idle>
      Kill connections with idle time greater than or equal to <idle> seconds.
    * LIB-NAME <library-name>
      Kill connections with the specified library name.
    * LIB-VER <library-version>
      Kill connections with the specified library version.
    * DB <db-id>
      Kill connections currently operating on the specified database ID.
    * CAPA <capa>
      Kill connections currently with the specified capa.
    * IP <ip>
      Kill connections made from the specified ip.
LIST [options ...]
    Return information about client connections. Options:
    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)
      Return clients of specified type.
    * USER <username>
      Return clients authenticated by <username>.
    * ADDR <ip:port>
      Return clients connected from the specified address.
    * LADDR <ip:port>
      Return clients connected to the specified local address.
    * ID <client-id> [<client-id>...]
      Return clients with the specified IDs.
    * SKIPME (YES|NO)
      Exclude the current client from the list (default: no).
    * MAXAGE <maxage>
      List connections older than the specified age.
    * FLAGS <flags>
      Return clients with the specified flags.
    * NAME <client-name>
      Return clients with the specified name.
    * IDLE <idle>
      Return clients with idle time greater than or equal to <idle> seconds.
    * LIB-NAME <lib-name>
      Return clients with the specified lib name.
    * LIB-VER <lib-version>
      Return clients with the specified lib version.
    * DB <db-id>
      Return clients currently operating on the specified database ID.
    * CAPA <capa>
      Return connections currently with the specified capa.
    * IP <ip>
      Return connections made from the specified ip.
UNPAUSE
    Stop the current client pause, resuming traffic.
PAUSE <timeout> [WRITE|ALL]
    Suspend all, or just write, clients for <timeout> milliseconds.
REPLY (ON|OFF|SKIP)
    Control the replies sent to the current connection.
SETNAME <name>
    Assign the name <name> to the current connection.
SETINFO <option> <value>
    Set client meta attr. Options are:
    * LIB-NAME: the client lib name.
    * LIB-VER: the client lib version.
UNBLOCK <clientid> [TIMEOUT|ERROR]
    Unblock the specified blocked client.
TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]
         [OPTIN] [OPTOUT] [NOLOOP]
    Control server assisted client side caching.
TRACKINGINFO
    Report tracking status for the current connection.
NO-EVICT (ON|OFF)
    Protect current client connection from eviction.
NO-TOUCH (ON|OFF)
    Will not touch LRU/LFU stats when this mode is on.
IMPORT-SOURCE (ON|OFF)
    Mark this connection as an import source if import-mode is enabled.
    Sync tools can set their connections into 'import-source' state to visit
    expired keys.
HELP
    Print this help.
"""

# COMMAND HELP's lines as the real 7.0.15, 6.2.14 and Valkey 9.1.2 answer them.
COMMAND_HELP = """
(no subcommand)
    Return details about all Redis commands.
COUNT
    Return the total number of commands in this Redis server.
LIST
    Return a list of all commands in this Redis server.
INFO [<command-name> ...]
    Return details about multiple Redis commands.
    If no command names are given, documentation details for all
    commands are returned.
DOCS [<command-name> ...]
    Return documentation details about multiple Redis commands.
    If no command names are given, documentation details for all
    commands are returned.
GETKEYS <full-command>
    Return the keys from a full Redis command.
GETKEYSANDFLAGS <full-command>
    Return the keys and the access flags from a full Redis command.
HELP
    Prints this help.
"""
COMMAND_HELP_62 = """
(no subcommand)
    Return details about all Redis commands.
COUNT
    Return the total number of commands in this Redis server.
GETKEYS <full-command>
    Return the keys from a full Redis command.
INFO [<command-name> ...]
    Return details about multiple Redis commands.
HELP
    Prints this help.
"""
COMMAND_HELP_VALKEY = """
(no subcommand)
    Return details about all commands.
COUNT
    Return the total number of commands in this server.
LIST
    Return a list of all commands in this server.
INFO [<command-name> ...]
    Return details about multiple commands.
    If no command names are given, documentation details for all
    commands are returned.
DOCS [<command-name> ...]
    Return documentation details about multiple commands.
    If no command names are given, documentation details for all
    commands are returned.
GETKEYS <full-command>
    Return the keys from a full command.
GETKEYSANDFLAGS <full-command>
    Return the keys and the access flags from a full command.
HELP
    Print this help.
"""


# CLIENT HELP's lines as the real 7.2.6 (and 7.2.4) and 7.4.1 answer them: 7.0's with SETINFO after
# SETNAME and NO-TOUCH after NO-EVICT (7.2), and KILL's ID and MAXAGE filters (7.4).
CLIENT_HELP_72 = (CLIENT_HELP
                  .replace("    Assign the name <name> to the current connection.\n",
                           "    Assign the name <name> to the current connection.\n"
                           "SETINFO <option> <value>\n"
                           "    Set client meta attr. Options are:\n"
                           "    * LIB-NAME: the client lib name.\n"
                           "    * LIB-VER: the client lib version.\n", 1)
                  .replace("    Protect current client connection from eviction.\n",
                           "    Protect current client connection from eviction.\n"
                           "NO-TOUCH (ON|OFF)\n"
                           "    Will not touch LRU/LFU stats when this mode is on.\n", 1))
CLIENT_HELP_74 = CLIENT_HELP_72.replace(
    "      Skip killing current connection (default: yes).\n",
    "      Skip killing current connection (default: yes).\n"
    "    * ID <client-id>\n"
    "      Kill connections by client id.\n"
    "    * MAXAGE <maxage>\n"
    "      Kill connections older than the specified age.\n", 1)
