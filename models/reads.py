"""Handlers of the reads command family (being written)."""
