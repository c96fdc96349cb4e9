"""xspec: the executable formal specification of Redis Streams and consumer groups."""

__version__ = "0.1.0"
