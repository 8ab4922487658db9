"""The shape of the tree, read from its imports (AST only; nothing is imported).

Rules:

1. ``libs/`` never imports ``services/``: a library is usable by any client
   (the CLI, a worker written against ``drover.worker``) without a service.
2. Pure cores stay pure: the modules in :data:`CORE` import no asyncio, no
   grpc and no etcd client, directly or through any drover module they
   import. Their logic is tested with a virtual clock, in milliseconds.
3. One etcd layer: only :data:`ETCD_LAYER` imports an etcd client
   (``aetcd``, its generated ``etcdrpc``): the typed KV on etcd and the
   client and endpoint pool under it. The rest of ``drover.coord`` (session,
   election, watch, membership, fence, ...) runs on the typed Protocols.
   :data:`ETCD_EXCEPTIONS` lists what still does so elsewhere, each with
   the reason; the test fails when one is added *or* when one no longer
   needs its exception, so the list only shrinks.
4. Modules over 400 lines are reported as a warning: a prompt to ask
   whether the module is two concepts, not a failure.
"""

from __future__ import annotations

import ast
import warnings
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = (ROOT / "libs", ROOT / "services")
GENERATED = "drover.api"
SERVICES = frozenset(p.name for p in (ROOT / "services" / "drover").iterdir()
                     if p.is_dir() and not p.name.startswith("_"))
IMPURE_ROOTS = frozenset({"asyncio", "grpc", "grpc_status", "grpc_health", "grpc_reflection",
                          "aetcd", "etcdrpc"})
ETCD_CLIENTS = frozenset({"aetcd", "etcdrpc"})

#: Modules (or packages: every module under them) that must stay pure.
CORE: tuple[str, ...] = (
    "drover.filter",
    "drover.paging",
    "drover.validation",
    "drover.remote_errors",
    "drover.coord.decide",
    "drover.coord.clock",
    "drover.coord.watch_buffer",
    "drover.coord.endpoints",
    "drover.acl.policy",
    "drover.acl.table",
    "drover.acl.freshness",
    "drover.broker.core",
    "drover.broker.intake",
    "drover.broker.delivery",
    "drover.broker.queues",
    "drover.broker.record",
    "drover.broker.deferred",
    "drover.broker.stats",
    "drover.broker.effects",
    "drover.broker.write_batch",
    "drover.proxy.server_list",
    "drover.proxy.retry",
    "drover.proxy.rebalance",
    "drover.proxy.interval",
    "drover.proxy.version_gate",
    "drover.proxy.convergence",
    "drover.proxy.resume",
    "drover.proxy.failure",
    "drover.worker.planner",
    "drover.worker.resources",
    "drover.worker.heartbeats",
    "drover.sim.client",
    "drover.deployments.accounting",
    "drover.deployments.deadline",
    "drover.deployments.batcher",
    "drover.deployments.revert",
    "drover.state.core",
    "drover.state.core.gc_rules",
    "drover.state.core.query_specs",
)

#: The one etcd layer: the modules that may build etcd requests.
ETCD_LAYER: frozenset[str] = frozenset({
    "drover.coord.etcd_kv",   # the typed KV (drover.coord.kv) on etcd
    "drover.coord.connect",   # the client: channels, TLS, one per purpose
    "drover.coord.pool",      # the health-checked endpoint pool under both
})

#: Modules outside the layer that still import an etcd client, and why.
ETCD_EXCEPTIONS: dict[str, str] = {
    "drover.dev.etcd": "dev tooling: starts etcd members and asks them for status",
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for tree in TREES:
        for path in (tree / "drover").rglob("*.py"):
            rel = path.relative_to(tree).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join(parts)
            if not name.startswith(GENERATED):
                out[name] = path
    return out


MODULES = _modules()


@cache
def _imports(name: str) -> frozenset[str]:
    """Absolute names of every module ``name`` imports (at any depth of its AST)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
            # ``from pkg import module`` imports the module too.
            found.update(f"{mod}.{alias.name}" for alias in node.names
                         if f"{mod}.{alias.name}" in MODULES)
    return frozenset(found)


def _root(module: str) -> str:
    return module.split(".")[0]


def _is_core(name: str) -> bool:
    return any(name == c or name.startswith(c + ".") for c in CORE)


def _impure_path(name: str) -> list[str] | None:
    """A chain of imports from ``name`` to an impure module, if there is one."""
    seen: set[str] = set()
    stack: list[tuple[str, list[str]]] = [(name, [name])]
    while stack:
        current, chain = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for imported in _imports(current):
            if _root(imported) in IMPURE_ROOTS:
                return [*chain, imported]
            if imported in MODULES and not imported.startswith(GENERATED):
                stack.append((imported, [*chain, imported]))
    return None


def test_the_tree_was_found() -> None:
    assert len(MODULES) > 100
    assert {"state", "broker", "deployments", "proxy"} <= SERVICES


def test_libs_never_import_services() -> None:
    bad = []
    for name, path in MODULES.items():
        if not path.is_relative_to(ROOT / "libs"):
            continue
        for imported in _imports(name):
            parts = imported.split(".")
            if parts[0] == "drover" and len(parts) > 1 and parts[1] in SERVICES:
                bad.append(f"{name} imports {imported}")
    assert not bad, "\n".join(bad)


def test_core_modules_exist() -> None:
    missing = [c for c in CORE if not any(n == c or n.startswith(c + ".") for n in MODULES)]
    assert not missing, f"CORE names modules that are gone: {missing}"


def test_core_modules_import_no_asyncio_grpc_or_etcd() -> None:
    bad = []
    for name in sorted(n for n in MODULES if _is_core(n)):
        chain = _impure_path(name)
        if chain is not None:
            bad.append(" -> ".join(chain))
    assert not bad, "pure cores reach I/O:\n" + "\n".join(bad)


def test_only_the_etcd_layer_talks_to_etcd() -> None:
    talking = {name for name in MODULES
               if any(_root(i) in ETCD_CLIENTS for i in _imports(name))}
    outside = talking - ETCD_LAYER
    unexplained = outside - ETCD_EXCEPTIONS.keys()
    assert not unexplained, (f"etcd clients used outside {sorted(ETCD_LAYER)}: "
                             f"{sorted(unexplained)}")
    stale = ETCD_EXCEPTIONS.keys() - outside
    assert not stale, f"no longer talk to etcd; drop their exception: {sorted(stale)}"


def test_modules_over_400_lines_are_listed() -> None:
    long = sorted((len(p.read_text().splitlines()), n) for n, p in MODULES.items()
                  if len(p.read_text().splitlines()) > 400)
    if long:
        warnings.warn("modules over 400 lines (one concept each?): "
                      + ", ".join(f"{n} ({lines})" for lines, n in long), stacklevel=1)
