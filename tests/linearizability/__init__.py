"""A linearizability checker for client-recorded histories (Knossos /
Porcupine style), and the models drover's histories are checked against.

:mod:`.history` records operations as clients see them (invoke, then ok,
fail or info, with monotonic times); :mod:`.checker` decides whether a
history is linearizable under a :class:`~.checker.Model` (Wing & Gong's
search with Lowe's memoization of (linearized set, state), split per key:
P-compositionality); :mod:`.models` has the register/compare-and-set
models of jobs (the job modify index as the version) and of evaluations.
"""

from linearizability.checker import CheckResult, Model, Operation, check
from linearizability.history import History

__all__ = ["CheckResult", "History", "Model", "Operation", "check"]
