"""Handlers of the streams command family (being written)."""
