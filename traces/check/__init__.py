"""Conformance: the checker, symbolic time, the replay report and ``xspec explain``."""
