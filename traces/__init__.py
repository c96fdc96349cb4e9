"""xspec.traces: trace reading and writing, the recorder, the checker, the corpus."""

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent
"""Where the bundled corpora live (``redis-7.0.15/`` ...), installed or not."""
