"""Handlers of the transactions command family (being written)."""
