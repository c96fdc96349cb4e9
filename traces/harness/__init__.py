"""Targets (servers named by URL), finding server binaries, and live replay on a server."""
