"""The GarbageCollect cases (``tests/state_gc_cases.py``) on a state service over
:class:`MemoryKV`: the same bodies as the etcd run, no etcd."""

from __future__ import annotations

from state_gc_cases import (  # noqa: F401  (pytest collects imported tests)
    test_deployment_job_and_node_gc,
    test_eval_gc_follows_nomads_rules,
    test_eval_gc_walks_with_a_cursor_in_bounded_txns,
    test_gc_requires_a_fence_and_a_valid_request,
)
