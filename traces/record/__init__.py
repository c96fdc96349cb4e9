"""Recording: scripted clients, the recording proxy (``xspec record``) and a small RESP client."""
