"""Self-contained HTML views of traces, divergences and state graphs."""
