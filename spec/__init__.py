"""xspec.spec: the normative specification and what every part of xspec shares.

Numbered rules live in ``rules/*.md``; this package also holds the RESP value
types (:mod:`.resp`), stream IDs and Redis's parsers (:mod:`.ids`), the command
table (:mod:`.commands`) and the invariants as executable predicates
(:mod:`.invariants`).
"""
