"""Handlers of the admin command family (being written)."""
