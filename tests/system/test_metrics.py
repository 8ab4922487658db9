"""`curl /metrics` on each of the four services shows the domain series, and
the Grafana dashboard and Prometheus alert rules under deploy/ query only
series that a real scrape of the services contains."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from service_procs import serve

from drover.dev.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "drover-dashboard.json"
ALERTS = ROOT / "deploy" / "prometheus" / "drover-alerts.yaml"

#: Series each service must export (Prometheus names).
DOMAIN = {
    "state": ["drover_state_cache_applied_revision", "drover_state_cache_lag",
              "drover_state_etcd_txn_duration_seconds_bucket",
              "drover_state_etcd_txn_compare_failures_total",
              "drover_state_etcd_contact_age_seconds", "drover_state_cache_own_writes_total"],
    "broker": ["drover_broker_evaluations", "drover_broker_scheduler_evaluations",
               "drover_broker_nacks_total", "drover_broker_failed_total",
               "drover_broker_cancelled_total", "drover_broker_enabled",
               "drover_leadership_is_leader", "drover_leadership_term",
               "drover_leadership_transitions_total"],
    "deployments": ["drover_deployments_active", "drover_deployments_evaluations_total",
                    "drover_deployments_promotions_total", "drover_deployments_outcomes_total",
                    "drover_leadership_is_leader"],
    "proxy": ["drover_proxy_servers", "drover_proxy_rotations_total",
              "drover_proxy_retries_total",
              "drover_proxy_membership_applied_revision",
              "drover_proxy_attempts_ended_total", "drover_proxy_stream_resumes_total"],
    # A state replica with --acl (its own key prefix, so the others need no token).
    "state-acl": ["drover_acl_staleness_seconds"],
}


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def _names(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", text, re.M)}


def _labels(text: str) -> set[str]:
    return set(re.findall(r'[{,]([a-zA-Z_][a-zA-Z0-9_]*)="', text))


def _label_names(expr: str) -> set[str]:
    """Label names an expression groups by or matches on."""
    out: set[str] = set()
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        out.update(n.strip() for n in group.split(",") if n.strip())
    for matchers in re.findall(r"\{([^}]*)\}", expr):
        out.update(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
    return out


def _queries() -> Iterator[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r}", target["expr"]
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"alert {rule['alert']}", rule["expr"]


_PROMQL_WORDS = {"sum", "by", "rate", "increase", "max", "min", "avg", "histogram_quantile",
                 "le", "without", "on", "ignoring", "and", "or", "unless", "count", "time",
                 "changes", "delta", "deriv", "absent", "bool", "offset", "clamp_min",
                 "max_over_time", "min_over_time", "avg_over_time", "resets", "irate"}


def _metric_names(expr: str) -> set[str]:
    """Identifiers in a PromQL expression that name series (not functions,
    keywords, label names inside {} or by(...), durations or strings)."""
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    return {n for n in names if n not in _PROMQL_WORDS}


@pytest.mark.slow
def test_services_export_domain_series_the_dashboard_and_alerts_use(
    etcd_endpoint: str, etcd_prefix: str, tmp_path: Path,
) -> None:
    ports = {s: free_port() for s in DOMAIN}
    with ExitStack() as stack:
        def up(service: str, *extra: str) -> str:
            return stack.enter_context(serve(
                service, etcd_endpoint, etcd_prefix,
                "--metrics-listen", f"127.0.0.1:{ports[service]}", *extra))

        state = up("state")
        stack.enter_context(serve(
            "state", etcd_endpoint, f"{etcd_prefix}-acl", "--acl",
            "--metrics-listen", f"127.0.0.1:{ports['state-acl']}"))
        up("broker", "--state-address", state)
        up("deployments", "--state-address", state)
        proxy = up("proxy")
        spec = tmp_path / "web.yaml"
        spec.write_text("id: metered\nnamespace: default\ntype: JOB_TYPE_SERVICE\n"
                        "priority: 50\ndatacenters: [dc1]\n"
                        "taskGroups:\n  - name: web\n    count: 2\n"
                        "    update: {maxParallel: 1}\n")
        deadline = time.monotonic() + 30
        while True:
            ran = subprocess.run(
                [sys.executable, "-m", "drover.cli.main", "job", "run", "--detach", str(spec),
                 "--address", proxy], capture_output=True, text=True, timeout=60, check=False)
            if ran.returncode == 0:
                break
            assert time.monotonic() < deadline, ran.stderr
            time.sleep(0.3)
        scraped: dict[str, str] = {}
        deadline = time.monotonic() + 30
        while True:
            scraped = {s: _scrape(p) for s, p in ports.items()}
            missing = {s: [n for n in want if n not in _names(scraped[s])]
                       for s, want in DOMAIN.items()}
            leaders = [s for s in ("broker", "deployments")
                       if re.search(r"^drover_leadership_is_leader\{[^}]*\} 1\.0$",
                                    scraped[s], re.M)]
            if not any(missing.values()) and len(leaders) == 2:
                break
            assert time.monotonic() < deadline, (missing, leaders)
            time.sleep(0.3)
    # The broker counts the job's evaluation; the proxy lists three servers.
    assert re.search(r'^drover_proxy_servers\{[^}]*service="state"[^}]*\} 1\.0$',
                     scraped["proxy"], re.M), scraped["proxy"]
    exported = set().union(*(_names(t) for t in scraped.values()))
    labels = set().union(*(_labels(t) for t in scraped.values())) | {"le", "instance", "job"}
    queries = list(_queries())
    assert len(queries) >= 20
    unknown = {(where, n) for where, expr in queries for n in _metric_names(expr)
               if n not in exported}
    assert not unknown, sorted(unknown)
    bad_labels = {(where, n) for where, expr in queries for n in _label_names(expr)
                  if n not in labels}
    assert not bad_labels, sorted(bad_labels)


def test_alert_rules_are_well_formed() -> None:
    rules = yaml.safe_load(ALERTS.read_text())
    names = [r["alert"] for g in rules["groups"] for r in g["rules"]]
    assert len(names) == len(set(names)) >= 8
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            assert rule["annotations"]["summary"]
            assert rule["expr"].count("(") == rule["expr"].count(")")
    board = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
