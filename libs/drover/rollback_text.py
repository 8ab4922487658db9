"""What a failed deployment's description says about its rollback, in
Nomad's words (``DeploymentStatusDescriptionRollback``, ``...RollbackNoop``,
``...NoRollbackTarget``), shared by the watcher that decides a revert and
the state service that performs it.

Invariant: a description claims a rollback only when it happened. The
watcher writes :func:`rolling_back` with the revert in one request; when
the state service skips that revert (the job changed meanwhile) it rewrites
the claim with :func:`not_rolled_back`.
"""

from __future__ import annotations


def rolling_back(base: str, version: int) -> str:
    return f"{base} - rolling back to job version {version}"


def rollback_noop(base: str, version: int) -> str:
    return (f"{base} - not rolling back to stable job version {version} as current job has "
            "same specification")


def no_rollback_target(base: str) -> str:
    return f"{base} - no stable job version to auto revert to"


def not_rolled_back(description: str, version: int) -> str:
    """``description`` without its claim to roll back to ``version``, saying why."""
    claim = rolling_back("", version)
    base = description[: -len(claim)] if description.endswith(claim) else description
    return f"{base} - not rolling back to job version {version}: the job changed meanwhile"
