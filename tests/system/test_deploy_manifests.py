"""deploy/: the container image and the Kubernetes manifests, checked without
Docker or a cluster (neither exists where these tests run).

- Every base object validates against the newest Kubernetes schema that
  kubernetes-validate ships, in strict mode (an unknown field fails).
- The dev overlay is only `resources` + strategic-merge `patches` that target
  base objects. To check what the overlay *produces*, `_merge` applies the
  patches with the small part of strategic-merge semantics they are allowed
  to use (maps merge; containers/env/volumes merge by name; other lists are
  replaced); `test_dev_patches_*` refuses any patch outside that subset, so
  the rendering cannot silently differ from kustomize's.
- Cross-references a schema cannot see: probes on the health port and the
  right health service name, Service/PDB selectors, ConfigMap keys, the etcd
  member list, the shutdown grace, pinned images, the Dockerfile's user and
  entrypoint. Each checker returns a list of problems, and is shown to find
  one in a deliberately broken copy.
- One test runs `drover serve <service>` with the ConfigMap's settings against
  the test etcd and asks the health port exactly what the probes ask.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import kubernetes_validate
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kubernetes_validate.utils import ValidationError

from drover.dev.ports import free_port
from drover.rpc.health import LIVENESS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "k8s" / "base"
DEV = DEPLOY / "k8s" / "overlays" / "dev"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"

#: Newest schema set in kubernetes-validate 1.37.0.
K8S_VERSION = "1.37.0"
#: drover service (the `drover serve` argument) -> full name its readiness probe asks for.
SERVICES = {
    "state": "drover.state.v1.StateService",
    "broker": "drover.broker.v1.EvalBrokerService",
    "deployments": "drover.deployments.v1.DeploymentWatcherService",
    "proxy": "drover.proxy.v1.ClientProxyService",
}
PORTS = {"grpc": 8080, "health": 8081, "metrics": 9090}
UID = 10001
WORKLOADS = ("Deployment", "StatefulSet")
MERGE_BY_NAME = {"containers", "initContainers", "env", "volumes"}
REPLACED_LISTS = {"volumeClaimTemplates", "accessModes", "command", "args"}

Obj = dict[str, Any]


# -- loading ---------------------------------------------------------------

def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _kustomization(directory: Path) -> Obj:
    (doc,) = _docs(directory / "kustomization.yaml")
    return doc


def _key(obj: Obj) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def _base() -> list[Obj]:
    return [d for r in _kustomization(BASE)["resources"] for d in _docs(BASE / r)]


def _merge(base: Any, patch: Any, key: str = "") -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = _merge(base[k], v, k) if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_BY_NAME:
        merged = list(base)
        index = {item["name"]: i for i, item in enumerate(merged)}
        for item in patch:
            if item["name"] in index:
                merged[index[item["name"]]] = _merge(merged[index[item["name"]]], item)
            else:
                merged.append(item)
        return merged
    return patch


def _dev_patches() -> list[tuple[str, list[Obj]]]:
    return [(p["path"], _docs(DEV / p["path"])) for p in _kustomization(DEV)["patches"]]


def _dev() -> list[Obj]:
    objs = {_key(o): o for o in _base()}
    for _, docs in _dev_patches():
        for patch in docs:
            objs[_key(patch)] = _merge(objs[_key(patch)], patch)
    return list(objs.values())


RENDERS: dict[str, Callable[[], list[Obj]]] = {"base": _base, "dev": _dev}


def _pod(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"]
    return spec


def _containers(objs: list[Obj]) -> Iterator[tuple[Obj, Obj]]:
    for o in objs:
        if o["kind"] in WORKLOADS:
            for c in _pod(o)["containers"]:
                yield o, c


def _drover(objs: list[Obj]) -> Iterator[tuple[Obj, Obj]]:
    for o, c in _containers(objs):
        if c.get("command", [])[:2] == ["drover", "serve"]:  # not `drover ui`
            yield o, c


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _configmap(objs: list[Obj], name: str = "drover") -> dict[str, str]:
    data: dict[str, str] = next(
        o for o in objs if _key(o) == ("ConfigMap", name))["data"]
    return data


# -- checkers: each returns what is wrong ------------------------------------

def probe_problems(objs: list[Obj]) -> list[str]:
    out = []
    for o, c in _drover(objs):
        where = f"{o['metadata']['name']}/{c['name']}"
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        if ports.get("health") != PORTS["health"]:
            out.append(f"{where}: no containerPort health={PORTS['health']}")
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            grpc_probe = c.get(kind, {}).get("grpc")
            if grpc_probe is None or grpc_probe["port"] != PORTS["health"]:
                out.append(f"{where}: {kind} is not a gRPC probe on {PORTS['health']}")
                continue
            want = SERVICES.get(c["args"][0], "?") if kind == "readinessProbe" else LIVENESS
            if grpc_probe.get("service", "") != want:
                out.append(f"{where}: {kind} asks for {grpc_probe.get('service')!r}, not {want!r}")
    for o, c in _containers(objs):
        named = {p.get("name") for p in c.get("ports", [])}
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            http = c.get(kind, {}).get("httpGet")
            if http is not None and http["port"] not in named:
                out.append(f"{o['metadata']['name']}: {kind} port {http['port']} not declared")
    return out


def selector_problems(objs: list[Obj]) -> list[str]:
    out = []
    workloads = [o for o in objs if o["kind"] in WORKLOADS]
    for w in workloads:
        if not _selects(w["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]
                        ["labels"]):
            out.append(f"{w['metadata']['name']}: selector does not match its own pods")
    for o in objs:
        if o["kind"] == "Service":
            sel = o["spec"].get("selector", {})
        elif o["kind"] == "PodDisruptionBudget":
            sel = o["spec"]["selector"]["matchLabels"]
        else:
            continue
        hits = [w for w in workloads if _selects(sel, w["spec"]["template"]["metadata"]["labels"])]
        if len(hits) != 1:
            out.append(f"{_key(o)}: selector matches {len(hits)} workloads")
            continue
        (w,) = hits
        if o["kind"] == "Service":
            named = {p.get("name") for c in _pod(w)["containers"] for p in c.get("ports", [])}
            out += [f"{_key(o)}: targetPort {p['targetPort']} not a container port"
                    for p in o["spec"]["ports"] if p["targetPort"] not in named]
        else:
            replicas = w["spec"].get("replicas", 1)
            spec = o["spec"]
            allowed = (spec["maxUnavailable"] if "maxUnavailable" in spec
                       else replicas - spec["minAvailable"])
            if not isinstance(allowed, int) or allowed < 1:
                out.append(f"{_key(o)}: allows no disruption of {replicas} replicas (drains hang)")
    return out


def config_ref_problems(objs: list[Obj]) -> list[str]:
    out = []
    maps = {o["metadata"]["name"]: o.get("data", {}) for o in objs if o["kind"] == "ConfigMap"}
    for o, c in _containers(objs):
        where = f"{o['metadata']['name']}/{c['name']}"
        defined: set[str] = set()
        for ef in c.get("envFrom", []):
            name = ef["configMapRef"]["name"]
            if name not in maps:
                out.append(f"{where}: envFrom ConfigMap {name!r} does not exist")
            defined |= set(maps.get(name, {}))
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            if ref is not None and ref["key"] not in maps.get(ref["name"], {}):
                out.append(f"{where}: {e['name']} -> missing {ref['name']}/{ref['key']}")
            # The kubelet expands $(VAR) only from variables defined before it.
            for var in re.findall(r"\$\((\w+)\)", e.get("value", "")):
                if var not in defined:
                    out.append(f"{where}: {e['name']} uses $({var}) before it is defined")
            defined.add(e["name"])
    return out


def image_problems(objs: list[Obj]) -> list[str]:
    out = []
    for o, c in _containers(objs):
        image = c["image"]
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        if "@sha256:" not in image and tag in ("", "latest"):
            out.append(f"{o['metadata']['name']}: image {image!r} is not pinned")
    return out


def security_problems(objs: list[Obj]) -> list[str]:
    out = []
    for o, c in _containers(objs):
        where = f"{o['metadata']['name']}/{c['name']}"
        pod, sc = _pod(o).get("securityContext", {}), c.get("securityContext", {})
        if not (sc.get("runAsNonRoot") or pod.get("runAsNonRoot")):
            out.append(f"{where}: may run as root")
        if pod.get("runAsUser", sc.get("runAsUser")) != UID:
            out.append(f"{where}: runAsUser is not {UID}")
        if sc.get("readOnlyRootFilesystem") is not True:
            out.append(f"{where}: root filesystem is writable")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{where}: privilege escalation allowed")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            out.append(f"{where}: capabilities not dropped")
        if "resources" not in c or not {"requests", "limits"} <= set(c["resources"]):
            out.append(f"{where}: no resource requests and limits")
    return out


def etcd_problems(objs: list[Obj]) -> list[str]:
    sts = next(o for o in objs if _key(o) == ("StatefulSet", "etcd"))
    svc = next(o for o in objs if _key(o) == ("Service", sts["spec"]["serviceName"]))
    (c,) = _pod(sts)["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    n, sub = sts["spec"]["replicas"], svc["metadata"]["name"]
    members = [f"etcd-{i}" for i in range(n)]
    out = []
    want = ",".join(f"{m}=http://{m}.{sub}:2380" for m in members)
    if env["ETCD_INITIAL_CLUSTER"] != want:
        out.append(f"ETCD_INITIAL_CLUSTER {env['ETCD_INITIAL_CLUSTER']!r} != {want!r}")
    if env["ETCD_INITIAL_ADVERTISE_PEER_URLS"] != f"http://$(POD_NAME).{sub}:2380":
        out.append("peer URL is not the pod's stable DNS name")
    endpoints = _configmap(objs)["DROVER_ETCD"].split(",")
    if endpoints != [f"{m}.{sub}:2379" for m in members]:
        out.append(f"DROVER_ETCD {endpoints} does not list the {n} members")
    if svc["spec"].get("clusterIP") != "None" or not svc["spec"].get("publishNotReadyAddresses"):
        out.append("etcd Service must be headless and publish not-ready members")
    if sts["spec"].get("podManagementPolicy") != "Parallel":
        out.append("etcd members must start in parallel (quorum needs them all)")
    return out


def drover_problems(objs: list[Obj]) -> list[str]:
    out = []
    cm = _configmap(objs)
    grace = float(cm["DROVER_SHUTDOWN_GRACE"])
    seen = []
    for o, c in _drover(objs):
        where = o["metadata"]["name"]
        if c["command"] != ["drover", "serve"] or len(c.get("args", [])) != 1:
            out.append(f"{where}: does not run `drover serve <service>`")
            continue
        seen.append(c["args"][0])
        if c["args"][0] not in SERVICES:
            out.append(f"{where}: unknown service {c['args'][0]!r}")
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        if ports != PORTS:
            out.append(f"{where}: ports {ports} != {PORTS}")
        env = {e["name"]: e for e in c.get("env", [])}
        if env.get("DROVER_ADVERTISE", {}).get("value") != f"$(POD_IP):{PORTS['grpc']}":
            out.append(f"{where}: DROVER_ADVERTISE is not $(POD_IP):{PORTS['grpc']}")
        if env.get("POD_IP", {}).get("valueFrom", {}).get("fieldRef", {}).get(
                "fieldPath") != "status.podIP":
            out.append(f"{where}: POD_IP is not the downward-API pod IP")
        if env.get("DROVER_REPLICA", {}).get("valueFrom", {}).get("fieldRef", {}).get(
                "fieldPath") != "metadata.name":
            out.append(f"{where}: DROVER_REPLICA is not the pod name")
        # `drover serve` stops the app within the grace, then drains calls as long.
        if _pod(o).get("terminationGracePeriodSeconds", 30) <= 2 * grace:
            out.append(f"{where}: terminationGracePeriodSeconds <= 2 x shutdown grace {grace}")
    if sorted(seen) != sorted(SERVICES):
        out.append(f"drover Deployments {sorted(seen)} != {sorted(SERVICES)}")
    for var, port in (("DROVER_LISTEN", "grpc"), ("DROVER_HEALTH_LISTEN", "health"),
                      ("DROVER_METRICS_LISTEN", "metrics")):
        if cm[var] != f"0.0.0.0:{PORTS[port]}":
            out.append(f"{var}={cm[var]} is not 0.0.0.0:{PORTS[port]}")
    host, _, port = cm["DROVER_STATE_ADDRESS"].rpartition(":")
    state_svc = [o for o in objs if _key(o) == ("Service", host)]
    if not state_svc or int(port) not in {p["port"] for p in state_svc[0]["spec"]["ports"]}:
        out.append(f"DROVER_STATE_ADDRESS {cm['DROVER_STATE_ADDRESS']} is no Service port")
    return out


CHECKERS = [probe_problems, selector_problems, config_ref_problems, image_problems,
            security_problems, etcd_problems, drover_problems]


# -- the manifests ----------------------------------------------------------

def test_base_lists_every_manifest_once() -> None:
    resources = _kustomization(BASE)["resources"]
    on_disk = sorted(p.name for p in BASE.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(resources) == on_disk
    keys = [_key(o) for o in _base()]
    assert len(keys) == len(set(keys)), keys
    assert {k for k, _ in keys} == {"ConfigMap", "Service", "StatefulSet", "Deployment",
                                    "PodDisruptionBudget"}


@pytest.mark.parametrize("render", sorted(RENDERS))
def test_every_object_is_schema_valid_in_strict_mode(render: str) -> None:
    for obj in RENDERS[render]():
        assert kubernetes_validate.validate(obj, K8S_VERSION, strict=True) == "1.37", _key(obj)


def test_strict_validation_rejects_unknown_and_mistyped_fields() -> None:
    deploy = next(o for o in _base() if _key(o) == ("Deployment", "state"))
    unknown = copy.deepcopy(deploy)
    _pod(unknown)["containers"][0]["readinessProbe"]["grpc"]["path"] = "/healthz"
    with pytest.raises(ValidationError, match="'path' was unexpected"):
        kubernetes_validate.validate(unknown, K8S_VERSION, strict=True)
    mistyped = copy.deepcopy(deploy)
    _pod(mistyped)["containers"][0]["livenessProbe"]["grpc"]["port"] = "health"
    with pytest.raises(ValidationError, match="'health' is not of type 'integer'"):
        kubernetes_validate.validate(mistyped, K8S_VERSION, strict=True)


def test_every_object_carries_the_recommended_labels() -> None:
    for obj in _base():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "drover", _key(obj)
        assert labels["app.kubernetes.io/name"] and labels["app.kubernetes.io/component"]
        if obj["kind"] in WORKLOADS:
            pod_labels = obj["spec"]["template"]["metadata"]["labels"]
            assert pod_labels["app.kubernetes.io/component"] == labels[
                "app.kubernetes.io/component"]


@pytest.mark.parametrize("render", sorted(RENDERS))
@pytest.mark.parametrize("checker", CHECKERS, ids=lambda f: f.__name__)
def test_cross_references_hold(render: str, checker: Callable[[list[Obj]], list[str]]) -> None:
    assert checker(RENDERS[render]()) == []


def _break(edit: Callable[[list[Obj]], None]) -> list[Obj]:
    objs = copy.deepcopy(_base())
    edit(objs)
    return objs


def _get(objs: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objs if _key(o) == (kind, name))


@pytest.mark.parametrize(("checker", "edit", "expected"), [
    (probe_problems, lambda objs: _pod(_get(objs, "Deployment", "broker"))["containers"][0]
     ["readinessProbe"]["grpc"].update(port=8080), "readinessProbe is not a gRPC probe on 8081"),
    (probe_problems, lambda objs: _pod(_get(objs, "Deployment", "proxy"))["containers"][0]
     ["readinessProbe"]["grpc"].update(service="drover.state.v1.StateService"),
     "asks for 'drover.state.v1.StateService', not 'drover.proxy.v1.ClientProxyService'"),
    # Liveness asking readiness would restart every replica during an etcd outage.
    (probe_problems, lambda objs: _pod(_get(objs, "Deployment", "state"))["containers"][0]
     ["livenessProbe"]["grpc"].update(service="drover.state.v1.StateService"),
     "livenessProbe asks for 'drover.state.v1.StateService', not 'liveness'"),
    (selector_problems, lambda objs: _get(objs, "Service", "state")["spec"]["selector"].update(
        {"app.kubernetes.io/name": "drover-stat"}), "selector matches 0 workloads"),
    (selector_problems, lambda objs: _get(objs, "PodDisruptionBudget", "broker").update(
        spec={"minAvailable": 2, "selector": {"matchLabels": {
            "app.kubernetes.io/name": "drover-broker"}}}), "allows no disruption of 2 replicas"),
    (config_ref_problems, lambda objs: _pod(_get(objs, "Deployment", "state"))["containers"][0]
     ["envFrom"][0]["configMapRef"].update(name="drover-config"),
     "envFrom ConfigMap 'drover-config' does not exist"),
    (config_ref_problems, lambda objs: _pod(_get(objs, "Deployment", "state"))["containers"][0]
     ["env"].reverse(), "DROVER_ADVERTISE uses $(POD_IP) before it is defined"),
    (image_problems, lambda objs: _pod(_get(objs, "StatefulSet", "etcd"))["containers"][0]
     .update(image="quay.io/coreos/etcd:latest"), "is not pinned"),
    (security_problems, lambda objs: _pod(_get(objs, "Deployment", "deployments"))["containers"]
     [0]["securityContext"].pop("readOnlyRootFilesystem"), "root filesystem is writable"),
    (etcd_problems, lambda objs: _get(objs, "StatefulSet", "etcd")["spec"].update(replicas=5),
     "does not list the 5 members"),
    (drover_problems, lambda objs: _get(objs, "ConfigMap", "drover")["data"].update(
        DROVER_SHUTDOWN_GRACE="20"), "terminationGracePeriodSeconds <= 2 x shutdown grace"),
    (drover_problems, lambda objs: _pod(_get(objs, "Deployment", "proxy"))["containers"][0]
     .update(args=["router"]), "unknown service 'router'"),
])
def test_checkers_find_broken_manifests(
    checker: Callable[[list[Obj]], list[str]], edit: Callable[[list[Obj]], None], expected: str,
) -> None:
    problems = checker(_break(edit))
    assert any(expected in p for p in problems), problems


# -- the dev overlay --------------------------------------------------------

def _lists(node: Any, key: str = "") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _lists(v, k)
    elif isinstance(node, list):
        yield key, node
        for item in node:
            yield from _lists(item, key)


def test_dev_overlay_is_resources_plus_one_object_patches() -> None:
    kust = _kustomization(DEV)
    assert set(kust) == {"apiVersion", "kind", "resources", "patches"}
    assert kust["resources"] == ["../../base"]
    patches = _dev_patches()
    assert all(set(p) == {"path"} for p in kust["patches"])
    on_disk = sorted(p.name for p in DEV.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(path for path, _ in patches) == on_disk
    assert all(len(docs) == 1 for _, docs in patches)


def test_dev_patches_target_base_objects_within_the_merge_subset() -> None:
    base = {_key(o): o for o in _base()}
    for path, (patch,) in _dev_patches():
        assert _key(patch) in base, path
        assert "$patch" not in json.dumps(patch), path
        for key, _ in _lists(patch):
            assert key in MERGE_BY_NAME | REPLACED_LISTS, (path, key)
        if patch["kind"] in WORKLOADS:
            target = {c["name"]: c for c in _pod(base[_key(patch)])["containers"]}
            for c in _pod(patch)["containers"]:
                assert c["name"] in target, path  # a typo would add a container
                base_env = {e["name"] for e in target[c["name"]].get("env", [])}
                assert {e["name"] for e in c.get("env", [])} <= base_env, path


def test_dev_runs_one_of_everything_on_smaller_requests() -> None:
    base, dev = {_key(o): o for o in _base()}, {_key(o): o for o in _dev()}
    for key, obj in dev.items():
        if key[0] in WORKLOADS:
            assert obj["spec"]["replicas"] == 1, key
            (c,), (b,) = _pod(obj)["containers"], _pod(base[key])["containers"]
            assert c["resources"] != b["resources"], key
    assert _configmap(list(dev.values()))["DROVER_ETCD"] == "etcd-0.etcd:2379"


def test_access_control_is_on_in_every_overlay() -> None:
    """Every service reads the ConfigMap: DROVER_ACL turns enforcement on for all."""
    for objs in (_base(), _dev()):
        assert _configmap(objs)["DROVER_ACL"] == "true"
        for obj in objs:
            if obj["kind"] in WORKLOADS:
                for c in _pod(obj)["containers"]:
                    env = {e["name"]: e for e in c.get("env", [])}
                    assert "DROVER_ACL" not in env, "a workload overrides DROVER_ACL"


# -- the image ---------------------------------------------------------------

def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for op, rest in _instructions():
        if op == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((op, rest))
    return stages


def _ignored(path: str, patterns: list[str]) -> bool:
    # Docker semantics, enough for this file: the last matching pattern wins,
    # a pattern matching a parent directory matches everything under it.
    parts = path.split("/")
    ignored = False
    for raw in patterns:
        neg = raw.startswith("!")
        pat = raw.removeprefix("!").rstrip("/")
        variants = [pat, pat.removeprefix("**/")] if pat.startswith("**/") else [pat]
        for i in range(1, len(parts) + 1):
            if any(fnmatch.fnmatchcase("/".join(parts[:i]), v) for v in variants):
                ignored = not neg
                break
    return ignored


def test_dockerfile_is_multistage_slim_nonroot_with_drover_serve_entrypoint() -> None:
    instructions = _instructions()
    first_from = next(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    args = dict(rest.split("=", 1) for op, rest in instructions[:first_from] if op == "ARG")
    stages = _stages()
    assert len(stages) >= 2
    base_images = [re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], s[0][1]).split()[0]
                   for s in stages]
    assert base_images[-1] == "python:3.11-slim"
    assert len(set(base_images)) == 1  # the venv's python symlink must resolve in the final stage
    builder, final = "\n".join(r for _, r in stages[0]), stages[-1]
    assert "pip wheel" in builder and "--constraint constraints.txt" in builder
    users = [rest for op, rest in final if op == "USER"]
    assert users and users[-1].split(":")[0] == str(UID)
    (entrypoint,) = [json.loads(rest) for op, rest in final if op == "ENTRYPOINT"]
    deploys = [c for _, c in _drover(_base())]
    assert entrypoint == ["drover", "serve"] == deploys[0]["command"]
    copies = [rest for op, rest in final if op in ("COPY", "ADD")]
    assert copies == ["--from=builder /opt/drover /opt/drover"]
    exposed = {int(p) for op, rest in final if op == "EXPOSE" for p in rest.split()}
    assert exposed == set(PORTS.values())


def test_build_context_holds_what_the_builder_copies_and_nothing_heavy() -> None:
    patterns = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    sources = [src for op, rest in _stages()[0] if op == "COPY"
               for src in rest.split()[:-1] if not src.startswith("--")]
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    assert {"pyproject.toml", "constraints.txt", "libs", "services", readme} <= set(sources)
    for src in sources:
        assert (ROOT / src).exists(), src
        assert not _ignored(src, patterns), src
    assert not _ignored("libs/drover/cli/main.py", patterns)
    for heavy in (".venv/bin/python", "node_modules/x/y.js", ".git/HEAD",
                  "libs/drover/cli/__pycache__/main.cpython-311.pyc", "tests/conftest.py"):
        assert _ignored(heavy, patterns), heavy


# -- what the probes ask, asked of real servers ----------------------------

def test_servers_answer_the_probes_with_the_configmap_settings(
    etcd_endpoint: str, etcd_prefix: str, tmp_path: Path,
) -> None:
    objs = _base()
    config = _configmap(objs)
    grace = min(_pod(o).get("terminationGracePeriodSeconds", 30) for o, _ in _drover(objs))
    state_port = free_port()
    procs: dict[str, tuple[subprocess.Popen[bytes], Obj, dict[str, int]]] = {}
    try:
        for dep, c in _drover(objs):
            svc = c["args"][0]
            ports = {name: (state_port if svc == "state" and name == "grpc" else free_port())
                     for name in PORTS}
            env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
            # The ConfigMap as is, but on loopback ports and the test etcd.
            env.update(config)
            env.update(
                DROVER_ETCD=etcd_endpoint, DROVER_ETCD_PREFIX=etcd_prefix,
                DROVER_LISTEN=f"127.0.0.1:{ports['grpc']}",
                DROVER_HEALTH_LISTEN=f"127.0.0.1:{ports['health']}",
                DROVER_METRICS_LISTEN=f"127.0.0.1:{ports['metrics']}",
                DROVER_ADVERTISE=f"127.0.0.1:{ports['grpc']}",
                DROVER_REPLICA=f"{dep['metadata']['name']}-0",
                DROVER_STATE_ADDRESS=f"127.0.0.1:{state_port}",
            )
            with (tmp_path / f"{svc}.log").open("wb") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "drover.cli.main", *c["command"][1:], *c["args"]],
                    env=env, stdout=log, stderr=subprocess.STDOUT)
            procs[svc] = (proc, c, ports)
        for svc, (proc, c, ports) in procs.items():
            logs = tmp_path / f"{svc}.log"
            with grpc.insecure_channel(f"127.0.0.1:{ports['health']}") as ch:
                stub = health_pb2_grpc.HealthStub(ch)
                for kind in ("readinessProbe", "livenessProbe"):
                    asked = c[kind]["grpc"].get("service", "")
                    status, deadline = None, time.monotonic() + 30
                    while status != health_pb2.HealthCheckResponse.SERVING:
                        assert time.monotonic() < deadline, (svc, kind, status, logs.read_text())
                        assert proc.poll() is None, logs.read_text()
                        try:
                            status = stub.Check(health_pb2.HealthCheckRequest(service=asked),
                                                timeout=2, wait_for_ready=True).status
                        except grpc.RpcError as e:
                            status = e.code()
                        if status != health_pb2.HealthCheckResponse.SERVING:
                            time.sleep(0.1)
            metrics = f"http://127.0.0.1:{ports['metrics']}/metrics"
            with urllib.request.urlopen(metrics, timeout=5) as resp:
                assert resp.status == 200
        for svc in ["proxy", "deployments", "broker", "state"]:
            proc = procs[svc][0]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=grace) == 0, (tmp_path / f"{svc}.log").read_text()
    finally:
        for proc, _, _ in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
