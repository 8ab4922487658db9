"""`drover drill partition`, briefly: the broker leader cut from etcd for a
few seconds loses leadership to the other replica, deliveries resume before
the end, writes (which need only the state service) barely notice, and the
report says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from netns_required import needs_netns

from drover.dev.partition_drill import PartitionConfig, run_partition_drill

pytestmark = [pytest.mark.netfault, pytest.mark.slow,
              needs_netns,
              pytest.mark.timeout(180)]


async def test_partition_drill_cuts_the_broker_leader_and_reports(tmp_path: Path) -> None:
    cfg = PartitionConfig(target="broker-leader", fault_seconds=5.0, warmup=3.0, settle=5.0,
                          seed=7, logs=tmp_path)
    report = await run_partition_drill(cfg, say=print)
    print("\n".join(report.lines()))
    m = report.measured
    assert report.cut == report.leader_before
    assert report.leader_after and report.leader_after != report.leader_before, \
        "the cut leader's session expired: the other replica must lead"
    assert m.calls > 0 and 4.5 < m.fault_seconds < 8
    # Deliveries resumed under the new leader before the window ended, and
    # writes went on (the state service never lost etcd).
    assert m.delivery_gap < m.fault_seconds + cfg.settle
    assert m.write_gap < m.fault_seconds
    assert any(line.startswith("writes (RegisterJob) stopped") for line in report.lines())
