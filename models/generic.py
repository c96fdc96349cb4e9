"""Handlers of the generic command family (being written)."""
