"""xspec.reference: the reference RESP server (built in a later issue)."""
