"""Every service tunable is a `drover serve` flag with a DROVER_* twin, shown
in --help with the service's own default, wired into the service's config,
and listed in the manifests' ConfigMap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from drover.broker.app import BrokerApp
from drover.broker.app import create_app as broker_app
from drover.broker.config import BrokerConfig, ShellConfig
from drover.cli.serve import serve, settings_from_options
from drover.config import TUNABLES, AclSettings, ServeSettings, tunables
from drover.deployments.app import leader_config
from drover.deployments.config import BatcherConfig
from drover.state.app import state_config
from drover.state.config import CacheConfig, LivenessConfig, SubscribeConfig, WriterConfig

ROOT = Path(__file__).resolve().parents[3]

#: Where each tunable lands: the service config object and field.
WHERE = {
    "broker_nack_timeout": (BrokerConfig, "nack_timeout"),
    "broker_delivery_limit": (BrokerConfig, "delivery_limit"),
    "broker_initial_nack_delay": (BrokerConfig, "initial_nack_delay"),
    "broker_subsequent_nack_delay": (BrokerConfig, "subsequent_nack_delay"),
    "broker_failed_follow_up_base": (BrokerConfig, "failed_follow_up_base"),
    "broker_failed_follow_up_range": (BrokerConfig, "failed_follow_up_range"),
    "broker_max_batch": (ShellConfig, "max_batch"),
    "broker_max_poll": (ShellConfig, "max_poll"),
    "broker_max_txn_ops": (ShellConfig, "max_txn_ops"),
    "deployments_batch_window": (BatcherConfig, "window"),
    "deployments_batch_max": (BatcherConfig, "max_batch"),
    "deployments_progress_window": (BatcherConfig, "progress_window"),
    "state_cache_page_size": (CacheConfig, "page_size"),
    "state_sync_timeout": (CacheConfig, "sync_timeout"),
    "state_subscribe_buffer": (SubscribeConfig, "buffer_revisions"),
    "state_subscribe_replay_events": (SubscribeConfig, "replay_events"),
    "state_subscribe_replay_window": (SubscribeConfig, "replay_window"),
    "state_subscribe_heartbeat": (SubscribeConfig, "heartbeat"),
    "state_max_txn_ops": (WriterConfig, "max_txn_ops"),
    "state_delete_txns_in_flight": (WriterConfig, "delete_txns_in_flight"),
    "broker_heartbeat_check_interval": (ShellConfig, "heartbeat_check_interval"),
    "state_min_heartbeat_ttl": (LivenessConfig, "min_heartbeat_ttl"),
    "state_max_heartbeats_per_second": (LivenessConfig, "max_heartbeats_per_second"),
    "state_heartbeat_grace": (LivenessConfig, "heartbeat_grace"),
    "state_job_tracked_versions": (WriterConfig, "job_tracked_versions"),
    "state_etcd_write_timeout": (WriterConfig, "etcd_write_timeout"),
}


def _configs(settings: ServeSettings) -> dict[type, Any]:
    broker = broker_app(settings)
    assert isinstance(broker, BrokerApp)
    b, sh = broker.core.config, broker.runtime.config
    s = state_config(settings)
    return {BrokerConfig: b, ShellConfig: sh, BatcherConfig: leader_config(settings).batcher,
            CacheConfig: s.cache, SubscribeConfig: s.subscribe, WriterConfig: s.writer,
            LivenessConfig: s.liveness}


def test_the_table_covers_every_wired_tunable() -> None:
    assert {t.param for t in TUNABLES} == set(WHERE)


def test_help_defaults_are_the_services_defaults() -> None:
    defaults = _configs(ServeSettings(service="x"))
    for t in TUNABLES:
        cls, field = WHERE[t.param]
        assert getattr(defaults[cls], field) == t.default, t.param


@pytest.mark.parametrize("service", ["broker", "deployments", "state"])
def test_serve_help_lists_each_flag_and_its_env_twin(service: str) -> None:
    out = CliRunner().invoke(serve, [service, "--help"], terminal_width=200).output
    for t in tunables(service):
        assert t.flag in out and t.env in out, t.flag


def _settings(args: list[str]) -> ServeSettings:
    ctx = serve.make_context("serve", list(args))
    return settings_from_options(args[0], dict(ctx.params))


def test_flags_and_env_reach_the_service_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DROVER_BROKER_DELIVERY_LIMIT", "7")
    monkeypatch.setenv("DROVER_STATE_SUBSCRIBE_HEARTBEAT", "1m")
    settings = _settings(["broker", "--broker-nack-timeout", "2m",
                          "--deployments-batch-window", "500ms", "--state-cache-page-size", "10"])
    got = _configs(settings)
    assert got[BrokerConfig].nack_timeout == 120.0
    assert got[BrokerConfig].delivery_limit == 7
    assert got[BatcherConfig].window == 0.5
    assert got[CacheConfig].page_size == 10
    assert got[SubscribeConfig].heartbeat == 60.0
    # Unset ones keep the defaults.
    assert got[BrokerConfig].initial_nack_delay == 1.0


@pytest.mark.parametrize("param", sorted(WHERE))
def test_a_config_refuses_a_tunable_below_the_tables_minimum(param: str) -> None:
    """The bound is the table's (drover.config.check_tunables), as the flag's."""
    t = next(t for t in TUNABLES if t.param == param)
    cls, field = WHERE[param]
    below = t.minimum - 1 if t.kind is int else (t.minimum / 2 if t.minimum else -1.0)
    with pytest.raises(ValueError, match=f"{field} must be at least {t.minimum:g}, got"):
        cls(**{field: t.kind(below)})
    assert getattr(cls(**{field: t.kind(t.minimum)}), field) == t.minimum


@pytest.mark.parametrize(("args", "message"), [
    (["--broker-nack-timeout", "soon"], "not a duration: 'soon'"),
    (["--broker-nack-timeout", "0"], "must be at least"),
    (["--broker-delivery-limit", "0"], "x>=1"),
])
def test_bad_values_are_one_clear_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(serve, ["broker", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_the_configmap_lists_every_tunable_at_its_default() -> None:
    cm = yaml.safe_load((ROOT / "deploy" / "k8s" / "base" / "configmap.yaml").read_text())
    data = cm["data"]
    for t in TUNABLES:
        assert t.env in data, t.env
        settings = _settings([t.service, t.flag, data[t.env]])
        assert dict(settings.tuning)[t.param] == t.default, t.env


def _env(manifest: str, container: str) -> dict[str, str]:
    docs = yaml.safe_load_all((ROOT / "deploy" / "k8s" / "base" / manifest).read_text())
    for doc in docs:
        spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []):
            if c["name"] == container:
                return {e["name"]: e.get("value", "") for e in c.get("env", [])}
    raise AssertionError(f"no container {container!r} in {manifest}")


def test_the_state_service_is_told_etcds_max_txn_ops() -> None:
    """The manifests raise etcd's --max-txn-ops; the state service must be
    told exactly that (more: etcd refuses its txns; less: slower deletes)."""
    etcd = _env("etcd.yaml", "etcd")["ETCD_MAX_TXN_OPS"]
    assert _env("state.yaml", "state")["DROVER_STATE_MAX_TXN_OPS"] == etcd
    # The broker sizes its writes to the state's cap (more would be refused
    # and re-cut; less splits an AckBatch of 128 in two txns).
    assert _env("broker.yaml", "broker")["DROVER_BROKER_MAX_TXN_OPS"] == etcd


def test_the_acl_down_policy_flags_reach_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _settings(["state"]).acl_settings == AclSettings()  # unset: the one default
    monkeypatch.setenv("DROVER_ACL_DOWN_POLICY", "extend-cache")
    got = _settings(["proxy", "--acl-max-stale", "1m"]).acl_settings
    assert (got.max_stale, got.down_policy) == (60.0, "extend-cache")
    result = CliRunner().invoke(serve, ["state", "--acl-down-policy", "allow"])
    assert result.exit_code == 2 and "'allow' is not one of" in result.output


def test_the_configmap_sets_the_acl_down_policy_at_its_defaults() -> None:
    data = yaml.safe_load((ROOT / "deploy" / "k8s" / "base" / "configmap.yaml").read_text())["data"]
    got = _settings(["state", "--acl-max-stale", data["DROVER_ACL_MAX_STALE"],
                     "--acl-down-policy", data["DROVER_ACL_DOWN_POLICY"]]).acl_settings
    assert got == AclSettings()
