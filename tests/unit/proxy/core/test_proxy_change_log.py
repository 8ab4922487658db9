"""The change log behind the convergence barrier: a target revision -> the last
list-changing revision at or below it."""

from __future__ import annotations

import pytest

from drover.proxy.core.change_log import ChangeLog
from drover.proxy.errors import InvalidRevision


def test_change_log_maps_a_target_to_the_last_change_at_or_below_it() -> None:
    log = ChangeLog()
    log.record(10, changed=True)  # the initial view
    log.record(12, changed=False)  # a proxy published its revision
    log.record(15, changed=True)
    log.record(17, changed=False)
    assert log.observed == 17 and log.last_change == 15
    assert log.effective_target(12) == 10
    assert log.effective_target(15) == 15
    assert log.effective_target(17) == 15
    assert log.effective_target(18) is None  # not observed yet
    assert log.effective_target(5) == 5  # before our first view: stricter
    log.mark_quiet_through(20)
    assert log.effective_target(20) == 15


def test_change_log_forgets_old_changes_conservatively() -> None:
    log = ChangeLog(capacity=2)
    for rev in (3, 5, 7):
        log.record(rev, changed=True)
    assert log.effective_target(4) == 4  # 3 was forgotten: require the target itself
    assert log.effective_target(6) == 5
    log.record(6, changed=True)  # a late, reordered change is inserted in order
    assert log.effective_target(6) == 6


def test_change_log_bad_input() -> None:
    with pytest.raises(InvalidRevision):
        ChangeLog(capacity=0)
    with pytest.raises(InvalidRevision):
        ChangeLog().record(-1, changed=True)
    with pytest.raises(InvalidRevision):
        ChangeLog().effective_target(-1)
