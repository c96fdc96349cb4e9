"""Subcommands of the ``xspec`` command line that live in their own modules."""
