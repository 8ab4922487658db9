"""The List RPC cases (``tests/state_list_cases.py``) on a state service over
:class:`MemoryKV`: the same bodies as the etcd run, no etcd (``replica`` is
the in-memory one of ``tests/unit/state/conftest.py``)."""

from __future__ import annotations

from state_list_cases import (  # noqa: F401  (pytest collects imported tests and fixtures)
    _leader_fence,
    test_bad_filters_and_orders_name_the_field,
    test_every_list_walks_every_object_exactly_once,
    test_tokens_are_bound_to_their_request,
)
