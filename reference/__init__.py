"""xspec.reference: the reference server (``xspec serve``), an implementation of the spec independent of the model."""
