"""The proxy with a frozen state replica (SIGSTOP), all real processes.

A read through the proxy is answered by the other replica, a write in flight
on the frozen one is answered UNAVAILABLE ``OUTCOME_UNKNOWN``, both long
before the caller's 60 s deadline, and the Subscribe stream goes on from the
other replica with exactly the events a direct subscription there shows: no
gap, no duplicate. Times are measured by bench/proxy_bench.py --faults.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy_faults import cluster, freeze_the_used_replica, long_poll_outlives_the_hold

pytestmark = pytest.mark.slow

HOLD = 1.0


async def test_a_frozen_replica_neither_hangs_calls_nor_silences_the_stream(
    etcd_endpoint: str, etcd_prefix: str
) -> None:
    with cluster(etcd_endpoint, etcd_prefix, HOLD) as c:
        # First, on live replicas: a blocking read longer than the hold is not
        # cut short (it is woken by the write made after 2 x hold).
        code, _, priority = await long_poll_outlives_the_hold(c)
        assert (code, priority) == ("OK", 70)
        out = await freeze_the_used_replica(c)
    # The read went on to the other replica.
    assert out.read_code == "OK"
    # The write may have been applied by the frozen replica: the proxy says so
    # instead of waiting for the caller's deadline (which would be
    # DEADLINE_EXCEEDED after 60 s) or repeating it.
    assert (out.write_code, out.write_reason) == ("UNAVAILABLE", "OUTCOME_UNKNOWN")
    # The stream never ended and never went backwards...
    assert out.stream_error == ""
    assert list(out.indexes) == sorted(set(out.indexes))
    # ...and delivered exactly what the other replica has for that range.
    assert list(out.proxied) == list(out.direct)
    keys = [key for _, _, key in out.proxied]
    for key in ("pre0", "pre1", "pre2", "direct", "post0", "post1"):
        assert keys.count(key) == 1, (key, keys)
