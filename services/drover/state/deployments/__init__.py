"""The deployments family.

Reads: GetDeployment, ListDeployments (rows of
:data:`drover.state.core.query_specs.QUERIES`). Writes: :mod:`.rpcs`
(UpdateDeployment: the deployment watcher's one atomic write, leader only),
planned by :mod:`.core.deployment` (status, promotion, allocation health,
the evaluation and job version that come with them). The watcher that
decides them is another service (:mod:`drover.deployments`).
"""
