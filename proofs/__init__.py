"""xspec.proofs: properties of the model proved with Z3 over unbounded states (``xspec prove``).

* :mod:`.ids` — stream IDs as 128-bit bit-vectors;
* :mod:`.state` — the symbolic state (one stream, one group, arrays for every
  collection) and the invariants of spec/invariants.md over it;
* :mod:`.steps` — the model's transitions as Z3 terms, one per command or loop step;
* :mod:`.clients` — one client's transaction and blocking state (INV-10, INV-11);
* :mod:`.catalogue` — the properties (proofs.md), :mod:`.run` — checking them;
* :mod:`.concrete` and :mod:`.crosscheck` — the encodings against the executable
  model on random concrete states;
* :mod:`.cli` — the ``prove`` command.
"""
