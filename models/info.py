"""Handlers of the info command family (being written)."""
