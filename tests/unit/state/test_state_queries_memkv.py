"""The read RPC cases (``tests/state_query_cases.py``) on a state service over
:class:`MemoryKV`: the same bodies as the etcd run, no etcd (``replica`` is
the in-memory one of ``tests/unit/state/conftest.py``)."""

from __future__ import annotations

# Every case, so one added there runs on both stores (pytest collects imported tests).
from state_query_cases import *  # noqa: F403
