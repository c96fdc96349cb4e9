"""xspec.spec: the normative specification and what every part of xspec shares.

Numbered rules live in ``rules/*.md``; this package also holds the RESP value
types (:mod:`.resp`), stream IDs and Redis's parsers (:mod:`.ids`), the command
table (:mod:`.commands`), the dialects (:mod:`.dialect`), the trace format
(:mod:`.trace_format`) and the wire vocabulary the model and the reference
server share: error texts (:mod:`.errors`), HELP texts (:mod:`.help`), caps
and defaults (:mod:`.limits`), CONFIG parameters (:mod:`.config`), INFO's
layout (:mod:`.info`) and the glob matcher (:mod:`.glob`).
"""
