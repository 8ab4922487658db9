"""The read RPC cases (``tests/state_query_cases.py``) on a state service over etcd."""

from __future__ import annotations

# Every case, so one added there runs on both stores (pytest collects imported tests).
from state_query_cases import *  # noqa: F403
