"""The network fault scenarios' judges can fail: each on a made-up record
(no namespaces needed: this runs in `make test`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import netfault_cluster
import pytest
from chaos_load import Call, Delivery, Record
from netfault_cluster import HOLD, Final, judge, measure, served_after


def _good() -> Record:
    r = Record()
    r.evals = {"e1", "e2"}
    r.deliveries = [Delivery("e1", "j1", "5.a", 0.0, 0.1), Delivery("e2", "j2", "5.b", 1.0, 1.1)]
    r.calls = [Call("RegisterJob", 0.0, 0.2, "OK"), Call("RegisterJob", 3.0, 3.1, "OK")]
    return r


@dataclass
class _Ev:
    id: str


def _final(ids: set[str], r: Record) -> Final:
    """A final listing of ``ids`` begun once the load knew what ``r`` holds."""
    return Final([_Ev(i) for i in sorted(ids)], frozenset(r.evals), frozenset(r.deleted))


def test_a_good_record_passes() -> None:
    r = _good()
    assert judge(r, {"state-0": {"e1", "e2"}}, {"e1", "e2"}, _final({"e1", "e2"}, r)) == []


def test_what_the_load_learns_after_the_final_listing_began_is_not_judged_by_it() -> None:
    r = _good()
    final = _final({"e1", "e2"}, r)
    r.evals.add("e3")  # a follow-up created, and listed by the observer, after the listing
    r.deleted.add("e2")  # a delete answered after the listing saw e2
    assert judge(r, {}, {"e1", "e3"}, final) == []
    # and what it knew before still counts
    r = _good()
    final = _final({"e1"}, r)
    r.deleted.add("e2")  # a delete in flight while the listing ran excuses e2
    assert judge(r, {}, {"e1"}, final) == []
    assert any("vanished" in p for p in judge(_good(), {}, {"e1"}, _final({"e1"}, _good())))


def test_each_judge_fails_on_what_it_looks_for() -> None:
    everything = {"e1", "e2"}
    # lost: the load saw e2, it is gone (not deleted)
    assert any("vanished" in p for p in judge(_good(), {}, {"e1"}, _final({"e1"}, _good())))
    # resurrected: deleted, yet there at the end
    r = _good()
    r.deleted = {"e2"}
    assert any("is back" in p for p in judge(r, {}, everything, _final(everything, r)))
    # a delivery of an older term after a newer term delivered
    r = _good()
    r.deliveries.append(Delivery("e1", "j1", "4.c", 2.0, 2.1))
    assert any("under term 4" in p for p in judge(r, {}, everything, _final(everything, r)))
    # an unbounded call, unless an excused interval covers it
    r = _good()
    r.calls.append(Call("RegisterJob", 10.0, 10.0 + HOLD + 10, "UNAVAILABLE"))
    assert any("took" in p for p in judge(r, {}, everything, _final(everything, r)))
    assert not judge(r, {}, everything, _final(everything, r), excused=[(10.0, 20.0)])
    # a replica's cache not equal to etcd
    assert any("differs from etcd" in p
               for p in judge(_good(), {"state-1": {"e1"}}, everything,
                              _final(everything, _good())))


def test_a_deposed_leader_serving_is_seen() -> None:
    probes = [(0.5, "OK"), (1.5, "UNAVAILABLE NOT_LEADER"), (2.5, "OK")]
    assert served_after(probes, "broker-0", 0.0, 2.0) != []
    assert served_after(probes[:2], "broker-0", 0.0, 2.0) == []
    watcher = [(3.0, "NOT_FOUND DEPLOYMENT_NOT_FOUND")]
    assert served_after(watcher, "w", 0.0, 2.0, lambda c: c.startswith("NOT_FOUND")) != []


def test_measure_finds_the_longest_gaps_and_counts_failures() -> None:
    r = Record()
    r.calls = [Call("RegisterJob", 0.0, t, "OK") for t in (1.0, 2.0, 7.0, 8.0)]
    r.calls.append(Call("RegisterJob", 3.0, 4.0, "UNAVAILABLE", reason="OUTCOME_UNKNOWN"))
    r.deliveries = [Delivery("e", "j", "1.a", 0.0, 1.5)]
    m = measure("x", 1, r, 1.0, 5.0, 9.0)
    assert m.write_gap == 5.0  # 2.0 -> 7.0
    assert m.delivery_gap == 7.5  # 1.5 -> the end, 9.0
    assert m.fault_seconds == 4.0
    assert m.failed == {"RegisterJob UNAVAILABLE OUTCOME_UNKNOWN": 1}


def test_the_results_table_keeps_one_row_per_scenario_and_the_notes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "netfault.md"
    monkeypatch.setattr(netfault_cluster, "RESULTS", path)
    m = netfault_cluster.Measured("a. x", 1, 2.0, 0.5, 0.7, 10, {"Dequeue UNAVAILABLE": 2})
    netfault_cluster.write_result(m)
    path.write_text(path.read_text() + "\n## Notes\nhand-written\n")
    netfault_cluster.write_result(netfault_cluster.Measured("b. y", 2, 1.0, 0.1, 0.1, 5, {}))
    netfault_cluster.write_result(m)
    text = path.read_text()
    assert text.count("| a. x |") == 1 and text.count("| b. y |") == 1
    assert "Dequeue UNAVAILABLE x2" in text
    assert text.endswith("## Notes\nhand-written\n")
