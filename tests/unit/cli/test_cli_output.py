"""The CLI's output shapes (pure): Nomad's tables and detail blocks, words
for flags and times (issue 40, item 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from drover.cli.output import ago, detail_lines, table_lines, when, yes_no


def test_tables_have_no_trailing_spaces_and_say_yes_no() -> None:
    lines = table_lines(["ID", "Drain", "Description"], [["a", False, ""], ["b", True, "x"]],
                        total=80)
    assert lines == ["ID  Drain  Description", "a   no", "b   yes    x"]


def test_detail_blocks_pad_keys_and_fit() -> None:
    lines = detail_lines([("ID", "web"), ("Submit Date", "x" * 200), ("Stop", False)], total=80)
    assert lines[0] == "ID          = web" and lines[2] == "Stop        = no"
    assert len(lines[1]) == 80 and lines[1].endswith("…")


def test_times_have_a_zone_and_no_fraction() -> None:
    ts = Timestamp(seconds=1_700_000_000, nanos=123_456_789)
    text = when(ts)
    assert "." not in text and (text.endswith("Z") or text[-6] in "+-"), text
    assert when(Timestamp()) == "" and yes_no(True) == "yes"


def test_ago_reads_as_nomads() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    ts = Timestamp()
    ts.FromDatetime(now - timedelta(minutes=4, seconds=12))
    assert ago(ts, now) == "4m12s ago"
    ts.FromDatetime(now - timedelta(hours=2, minutes=3))
    assert ago(ts, now) == "2h3m ago"
