"""The shape of the tree, read from its imports (AST only; nothing is imported).

Rules, each a function over a :class:`Tree` so that every rule is also shown
to fail on a tree with a planted violation (``test_planted_*``):

1. **Layers.** ``libs/`` never imports ``services/`` (a library serves any
   client: the CLI, a worker written against ``drover.worker``), and no
   service imports another (they talk over gRPC, through ``drover.api``).
2. **One shape.** Every service is a package with ``app.py`` (wiring, and
   the one way its config is built), a thin ``servicer.py`` and a ``core/``
   package; the servicer composes its RPC groups (no class inheriting more
   than one drover class: no mixin tower).
3. **Pure by directory.** Everything under ``drover.<service>.core`` and
   under the pure libraries in :data:`PURE_LIBS` imports no asyncio, no
   grpc and no etcd client, directly or through any drover module it
   imports. There is no hand-kept list of modules: a module is pure because
   of where it lives, so moving logic into ``core/`` is how it is declared.
4. **One etcd layer.** Only :data:`ETCD_LAYER` imports an etcd client;
   :data:`ETCD_EXCEPTIONS` names what else does and why, and fails when an
   exception is no longer needed, so the list only shrinks.
5. **Errors map to gRPC in one place each way.** Outbound (a drover error
   becoming a status: ``abort``, ``set_code``, ``to_status``, building
   ``google.rpc`` details) only in :data:`OUTBOUND`; inbound (reading a
   status's details back: ``from_call``, parsing ``google.rpc``) only in
   :data:`INBOUND`.
6. Modules over 400 lines are reported as a warning: a prompt to ask
   whether the module is two concepts, not a failure.
"""

from __future__ import annotations

import ast
import textwrap
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = "drover.api"
IMPURE_ROOTS = frozenset({"asyncio", "grpc", "grpc_status", "grpc_health", "grpc_reflection",
                          "aetcd", "etcdrpc"})
ETCD_CLIENTS = frozenset({"aetcd", "etcdrpc"})
STATUS_DETAILS = ("grpc_status", "google.rpc")

#: Libraries (packages or modules under ``libs/``) that are pure as a whole.
PURE_LIBS: tuple[str, ...] = (
    "drover.errors",
    "drover.remote_errors",
    "drover.rpc.reads",
    "drover.gc_policy",
    "drover.filter",
    "drover.paging",
    "drover.validation",
    "drover.coord.decide",
    "drover.coord.clock",
    "drover.coord.watch_buffer",
    "drover.coord.keepalive_match",
    "drover.coord.endpoints",
    "drover.acl.policy",
    "drover.acl.table",
    "drover.acl.freshness",
    "drover.worker.planner",
    "drover.worker.resources",
    "drover.worker.heartbeats",
    "drover.sim.client",
    "drover.jobspec",
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

#: Where a drover error becomes a gRPC status (and nowhere else).
OUTBOUND = frozenset({"drover.rpc.errors"})
#: Where a failed call's status is read back into a drover error (the gRPC
#: half; :mod:`drover.remote_errors` is its pure half and reads no status).
INBOUND = frozenset({"drover.rpc.remote"})
_OUTBOUND_CALLS = frozenset({"abort", "abort_with_status", "set_code", "set_details",
                             "to_status"})
_INBOUND_CALLS = frozenset({"from_call"})


@dataclass
class Tree:
    """The drover modules of some source roots, by dotted name."""

    paths: dict[str, Path]
    services_root: Path
    libs_root: Path
    _sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def at(cls, root: Path) -> Tree:
        paths: dict[str, Path] = {}
        for tree in (root / "libs", root / "services"):
            for path in (tree / "drover").rglob("*.py"):
                parts = list(path.relative_to(tree).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                name = ".".join(parts)
                if not name.startswith(GENERATED):
                    paths[name] = path
        return cls(paths, root / "services" / "drover", root / "libs" / "drover")

    @cached_property
    def services(self) -> frozenset[str]:
        return frozenset(p.name for p in self.services_root.iterdir()
                         if p.is_dir() and not p.name.startswith(("_", ".")))

    def source(self, name: str) -> str:
        if name not in self._sources:
            self._sources[name] = self.paths[name].read_text()
        return self._sources[name]

    def ast(self, name: str) -> ast.Module:
        return ast.parse(self.source(name), filename=str(self.paths[name]))

    def in_libs(self, name: str) -> bool:
        return self.paths[name].is_relative_to(self.libs_root)

    def service_of(self, name: str) -> str | None:
        parts = name.split(".")
        if (len(parts) > 1 and parts[0] == "drover" and parts[1] in self.services
                and self.paths.get(name, self.services_root).is_relative_to(self.services_root)):
            return parts[1]
        return None

    def imports(self, name: str) -> frozenset[str]:
        """Absolute names of every module ``name`` imports (at any depth of its AST)."""
        path = self.paths[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(self.ast(name)):
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
                             if f"{mod}.{alias.name}" in self.paths)
        return frozenset(found)

    def is_pure_by_place(self, name: str) -> bool:
        svc = self.service_of(name)
        if svc is not None:
            core = f"drover.{svc}.core"
            return name == core or name.startswith(core + ".")
        return any(name == p or name.startswith(p + ".") for p in PURE_LIBS)

    def impure_path(self, name: str) -> list[str] | None:
        """A chain of imports from ``name`` to an impure module, if there is one."""
        seen: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(name, [name])]
        while stack:
            current, chain = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            for imported in self.imports(current):
                if imported.split(".")[0] in IMPURE_ROOTS:
                    return [*chain, imported]
                if imported in self.paths:
                    stack.append((imported, [*chain, imported]))
        return None


# -- the rules: each returns what breaks it ------------------------------------


def layer_violations(tree: Tree) -> list[str]:
    bad = []
    for name in tree.paths:
        mine = tree.service_of(name)
        for imported in tree.imports(name):
            parts = imported.split(".")
            if parts[0] != "drover" or len(parts) < 2 or parts[1] not in tree.services:
                continue
            if tree.in_libs(name):
                bad.append(f"library {name} imports service module {imported}")
            elif mine is not None and parts[1] != mine:
                bad.append(f"service {mine}: {name} imports another service's {imported}")
    return sorted(bad)


def shape_violations(tree: Tree) -> list[str]:
    bad = []
    for svc in sorted(tree.services):
        base = f"drover.{svc}"
        for part in ("app", "servicer"):
            if f"{base}.{part}" not in tree.paths:
                bad.append(f"service {svc} has no {part}.py")
        core = tree.services_root / svc / "core" / "__init__.py"
        if not core.exists():
            bad.append(f"service {svc} has no core/ package")
        servicer = f"{base}.servicer"
        if servicer in tree.paths:
            for node in ast.walk(tree.ast(servicer)):
                if isinstance(node, ast.ClassDef):
                    # Generated base classes (``*_pb2_grpc.XServicer``) are
                    # attributes; drover mixins are plain names.
                    own = [b for b in node.bases if isinstance(b, ast.Name)]
                    if len(own) > 1:
                        bad.append(f"{servicer}.{node.name} inherits {len(own)} classes "
                                   "(compose RPC groups, no mixin tower)")
    return bad


def purity_violations(tree: Tree) -> list[str]:
    bad = []
    for name in sorted(n for n in tree.paths if tree.is_pure_by_place(n)):
        chain = tree.impure_path(name)
        if chain is not None:
            bad.append(" -> ".join(chain))
    return bad


def etcd_violations(tree: Tree, layer: frozenset[str] = ETCD_LAYER,
                    exceptions: dict[str, str] = ETCD_EXCEPTIONS) -> list[str]:
    talking = {name for name in tree.paths
               if any(i.split(".")[0] in ETCD_CLIENTS for i in tree.imports(name))}
    bad = [f"{n} imports an etcd client outside the etcd layer"
           for n in sorted(talking - layer - exceptions.keys())]
    bad += [f"{n} no longer talks to etcd: drop its exception"
            for n in sorted(exceptions.keys() - talking)]
    return bad


def _called_attributes(module: ast.Module) -> set[str]:
    """Methods called on a servicer context (``context.abort(...)``, any name
    ending in ``context``) and the status helpers called on anything."""
    out = set()
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        on_context = isinstance(receiver, ast.Name) and receiver.id.endswith("context")
        if on_context or node.func.attr in ("to_status", "from_call"):
            out.add(node.func.attr)
    return out


def error_mapping_violations(tree: Tree) -> list[str]:
    bad = []
    for name in sorted(tree.paths):
        module = tree.ast(name)
        calls = _called_attributes(module)
        details = any(i == d or i.startswith(d + ".")
                      for i in tree.imports(name) for d in STATUS_DETAILS)
        outbound = calls & _OUTBOUND_CALLS
        inbound = calls & _INBOUND_CALLS
        if outbound and name not in OUTBOUND:
            bad.append(f"{name} maps errors to a gRPC status ({', '.join(sorted(outbound))}): "
                       f"only {sorted(OUTBOUND)} may")
        if inbound and name not in INBOUND:
            bad.append(f"{name} reads a status's details ({', '.join(sorted(inbound))}): "
                       f"only {sorted(INBOUND)} may")
        if details and name not in OUTBOUND | INBOUND:
            bad.append(f"{name} imports status details ({', '.join(STATUS_DETAILS)}): "
                       "only the two error-mapping modules may")
    return bad


# -- the real tree ------------------------------------------------------------

TREE = Tree.at(ROOT)


def test_the_tree_was_found() -> None:
    assert len(TREE.paths) > 100
    assert {"state", "broker", "deployments", "proxy"} <= TREE.services


def test_layers() -> None:
    bad = layer_violations(TREE)
    assert not bad, "\n".join(bad)


def test_every_service_has_one_shape() -> None:
    bad = shape_violations(TREE)
    assert not bad, "\n".join(bad)


def test_pure_libs_exist() -> None:
    missing = [p for p in PURE_LIBS
               if not any(n == p or n.startswith(p + ".") for n in TREE.paths)]
    assert not missing, f"PURE_LIBS names modules that are gone: {missing}"


def test_cores_import_no_asyncio_grpc_or_etcd() -> None:
    bad = purity_violations(TREE)
    assert not bad, "pure cores reach I/O:\n" + "\n".join(bad)


def test_only_the_etcd_layer_talks_to_etcd() -> None:
    bad = etcd_violations(TREE)
    assert not bad, "\n".join(bad)


def test_errors_map_to_grpc_in_one_module_each_way() -> None:
    bad = error_mapping_violations(TREE)
    assert not bad, "\n".join(bad)


def test_modules_over_400_lines_are_listed() -> None:
    long = sorted((len(TREE.source(n).splitlines()), n) for n in TREE.paths
                  if len(TREE.source(n).splitlines()) > 400)
    if long:
        warnings.warn("modules over 400 lines (one concept each?): "
                      + ", ".join(f"{n} ({lines})" for lines, n in long), stacklevel=1)


# -- planted violations: every rule fails on a tree that breaks it -----------

_GOOD = {
    "libs/drover/lib/__init__.py": "",
    "libs/drover/lib/pure.py": "import json\n",
    "libs/drover/rpc/__init__.py": "",
    "libs/drover/rpc/errors.py": (
        "from grpc_status import rpc_status\n"
        "async def abort(context, s):\n    await context.abort_with_status(s)\n"),
    "libs/drover/rpc/remote.py": (
        "from grpc_status import rpc_status\n"
        "def read(err):\n    return rpc_status.from_call(err)\n"),
    "libs/drover/coord/__init__.py": "",
    "libs/drover/coord/etcd_kv.py": "import aetcd\n",
    "libs/drover/coord/connect.py": "import aetcd\n",
    "libs/drover/coord/pool.py": "import aetcd\n",
    "libs/drover/dev/__init__.py": "",
    "libs/drover/dev/etcd.py": "import aetcd\n",
    "services/drover/svc/__init__.py": "",
    "services/drover/svc/app.py": "import asyncio\nfrom drover.svc.core import rules\n",
    "services/drover/svc/servicer.py": textwrap.dedent("""
        import x_pb2_grpc
        class Servicer(x_pb2_grpc.XServicer):
            def __init__(self, jobs):
                self._jobs = jobs
        """),
    "services/drover/svc/core/__init__.py": "",
    "services/drover/svc/core/rules.py": "from drover.lib import pure\n",
    "services/drover/other/__init__.py": "",
    "services/drover/other/app.py": "",
    "services/drover/other/servicer.py": "",
    "services/drover/other/core/__init__.py": "",
}


def _plant(root: Path, changes: dict[str, str | None]) -> Tree:
    files = {**_GOOD, **changes}
    for rel, text in files.items():
        if text is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Tree.at(root)


RULES = {
    "layers": layer_violations,
    "shape": shape_violations,
    "purity": purity_violations,
    "etcd": etcd_violations,
    "errors": error_mapping_violations,
}


def test_planted_good_tree_passes_every_rule(tmp_path: Path) -> None:
    tree = _plant(tmp_path, {})
    assert {name: rule(tree) for name, rule in RULES.items()} == {n: [] for n in RULES}


@pytest.mark.parametrize(("rule", "changes", "expect"), [
    ("layers", {"libs/drover/lib/pure.py": "from drover.svc.core import rules\n"},
     "library drover.lib.pure imports service module drover.svc.core.rules"),
    ("layers", {"services/drover/other/app.py": "from drover.svc import app\n"},
     "service other: drover.other.app imports another service's drover.svc.app"),
    ("shape", {"services/drover/other/servicer.py": None},
     "service other has no servicer.py"),
    ("shape", {"services/drover/other/core/__init__.py": None},
     "service other has no core/ package"),
    ("shape", {"services/drover/svc/servicer.py": "class S(JobsRpc, EvalsRpc):\n    pass\n"},
     "drover.svc.servicer.S inherits 2 classes"),
    ("purity", {"services/drover/svc/core/rules.py": "import asyncio\n"},
     "drover.svc.core.rules -> asyncio"),
    ("purity", {"services/drover/svc/core/rules.py": "from drover.svc import app\n"},
     "drover.svc.core.rules -> drover.svc.app -> asyncio"),
    ("purity", {"libs/drover/lib/pure.py": "import grpc\n"},
     "drover.svc.core.rules -> drover.lib.pure -> grpc"),
    ("etcd", {"libs/drover/lib/pure.py": "import aetcd\n"},
     "drover.lib.pure imports an etcd client outside the etcd layer"),
    ("etcd", {"libs/drover/dev/etcd.py": "import json\n"},
     "drover.dev.etcd no longer talks to etcd: drop its exception"),
    ("errors", {"services/drover/svc/app.py": (
        "async def h(context):\n    await context.abort(13, 'boom')\n")},
     "drover.svc.app maps errors to a gRPC status (abort)"),
    ("errors", {"libs/drover/lib/pure.py": "def r(e, rs):\n    return rs.from_call(e)\n"},
     "drover.lib.pure reads a status's details (from_call)"),
    ("errors", {"libs/drover/lib/pure.py": "from google.rpc import error_details_pb2\n"},
     "drover.lib.pure imports status details"),
])
def test_planted_violation_fails_its_rule(
    tmp_path: Path, rule: str, changes: dict[str, str | None], expect: str
) -> None:
    found = RULES[rule](_plant(tmp_path, changes))
    assert any(expect in line for line in found), found


def test_test_files_have_unique_basenames() -> None:
    """pytest imports test modules by basename (no __init__.py under tests/):
    two files of one name make the whole run fail at collection."""
    seen: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not twice, twice
