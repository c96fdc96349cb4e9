"""``xspec check``, the main job: corpora on the model, fuzzing a target, the report."""
