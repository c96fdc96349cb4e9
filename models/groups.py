"""Handlers of the groups command family (being written)."""
