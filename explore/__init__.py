"""Exhaustive exploration of the model and the delivery guarantees of consumer programs.

``xspec explore --config NAME|FILE`` walks every reachable state of a bounded
configuration; ``xspec explore --protocol NAME`` checks consumer programs for
safety and liveness. Definitions: spec/exploration.md.

Modules: :mod:`.abstraction` (keys, thawing, symmetry), :mod:`.execution`
(running steps on the model, memoised), :mod:`.engine` (breadth-first search,
state graph), :mod:`.config` (configurations), :mod:`.protocols` (consumer
programs and properties), :mod:`.liveness` (fair cycles), :mod:`.concrete`
(counterexample traces), :mod:`.report` and :mod:`.cli`. The compact engine (``--engine compact``):
:mod:`.compact` (configurations as one integer per state), :mod:`.fastwalk` (its walk),
:mod:`.refinement` (checked against the model), :mod:`.compact_run`; the delivery properties across
failures (``--protocol failover``): :mod:`.failover`, :mod:`.failover_report`,
:mod:`.failover_refinement` (checked against models/replication.py).
"""
