"""drover.config's tuning table: the one home of the tunables' defaults, and
the one way a service config is built from the settings (tuned_config)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from drover.config import ServeSettings, tunable_default, tuned_config


@dataclass(frozen=True)
class WriterConfig:  # the name the table's state tunables target
    max_txn_ops: int = tunable_default("state_max_txn_ops")
    delete_txns_in_flight: int = tunable_default("state_delete_txns_in_flight")
    other: str = ""


def test_defaults_come_from_the_table_with_their_kind() -> None:
    assert tunable_default("state_max_txn_ops") == 128
    assert isinstance(tunable_default("state_max_txn_ops"), int)
    assert tunable_default("deployments_batch_window") == 0.25


def test_a_config_gets_the_tunables_set_for_it_and_keeps_the_rest() -> None:
    settings = ServeSettings("state", tuning=(("state_max_txn_ops", 1024.0),
                                              ("broker_max_txn_ops", 7.0)))
    got = tuned_config(WriterConfig, settings, other="x")
    assert got == WriterConfig(max_txn_ops=1024, delete_txns_in_flight=4, other="x")
    assert isinstance(got.max_txn_ops, int)


def test_a_class_no_tunable_sets_is_refused() -> None:
    @dataclass(frozen=True)
    class Nothing:
        pass

    with pytest.raises(ValueError, match="no tunable sets a Nothing"):
        tuned_config(Nothing, ServeSettings("state"))
