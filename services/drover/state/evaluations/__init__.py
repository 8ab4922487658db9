"""The evaluations family.

Reads: GetEvaluation, ListEvaluations, CountEvaluations (rows of
:data:`drover.state.core.query_specs.QUERIES`). Writes: :mod:`.rpcs`
(UpsertEvaluations, UpdateEvaluations: the broker's outcomes,
DeleteEvaluations by ids) and :mod:`.delete_by_filter` (DeleteEvaluations
by filter, paged), planned by :mod:`.core.evals`. Blocked evaluations and
what unblocks them: :mod:`.core.unblock`. The broker, not the state,
delivers evaluations to workers (:mod:`drover.broker.core.delivery`).
"""
