"""Policy documents: parse, validate, expand (pure).

A policy is YAML or JSON shaped like Nomad's, with Nomad's names, so a
Nomad policy carries over::

    namespace:
      default: {policy: write}
      "*": {capabilities: [list-jobs, read-job]}
    operator: {policy: read}
    node: {policy: read}
    scheduler: {policy: write}

* ``namespace`` maps a namespace *glob* (``*`` matches any run of
  characters) to a rule: a coarse ``policy`` (``read``, ``write``,
  ``scale`` or ``deny``, expanded as Nomad's ``expandNamespacePolicy``)
  and/or fine ``capabilities`` (Nomad's names: :data:`NAMESPACE_CAPABILITIES`);
  both given means their union. ``deny`` (as policy or capability) denies
  everything in that namespace. Nomad capabilities for objects or calls
  drover has not (``read-logs``, ``csi-*``, ...: :data:`NO_OBJECT`) are
  accepted and grant nothing, with a warning; so is a rule's ``variables``
  block.
* ``operator`` (scheduler config reads, broker/watcher/proxy introspection,
  rebalancing), ``node`` (node registration and client status reports) and
  ``scheduler`` (scheduler workers: Dequeue/Ack/Nack, plan submission) each
  take ``{policy: read|write|deny}``; Nomad's ``agent``, ``quota`` and
  ``plugin`` rules are accepted likewise (nothing in drover needs them).
* Nomad's fine-grained job and deployment capabilities (``register-job``,
  ``plan-job``, ``promote-deployment``, ...: :data:`SUBMIT_JOB_IMPLIES`)
  each grant their own RPC; ``submit-job`` implies them all (Nomad's
  endpoints accept either). ``job stop --purge`` (DeregisterJob with
  ``purge``) needs ``purge-job``, as Nomad's ``Job.Deregister``; a stop
  needs ``deregister-job``, which ``purge-job`` implies (:data:`IMPLIES`).
  ``node_pool`` and ``host_volume`` blocks are accepted and ignored with a
  warning (drover has no such objects).
* Deprecated: drover's own earlier capability names ``list-evals`` (now
  Nomad's ``read-job``) and ``deployment-write`` (now ``submit-job``) are
  read as those, with a warning in :attr:`Policy.warnings` (ApplyPolicy
  returns it).

Anything else (an unknown key, capability or policy word) is refused with a
message naming where it is, so a typo never silently grants or withholds.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from drover.acl.errors import InvalidPolicy

__all__ = [
    "DEPRECATED_CAPABILITIES",
    "GLOBAL_AREAS",
    "IGNORED_BLOCKS",
    "IGNORED_NAMESPACE_KEYS",
    "IMPLIES",
    "NAMESPACE_CAPABILITIES",
    "NO_OBJECT",
    "SUBMIT_JOB_IMPLIES",
    "Level",
    "NamespaceRule",
    "Policy",
    "parse_policy",
    "validate_policy_name",
]

DENY = "deny"

#: Every namespace capability, Nomad's names (acl/policy.go), in its order.
#: Those drover asks for are in :data:`drover.acl.table.TABLE` (docs/acl.md
#: lists them); the rest are accepted and grant nothing here.
NAMESPACE_CAPABILITIES: tuple[str, ...] = (
    DENY, "list-jobs", "parse-job", "read-job", "submit-job", "dispatch-job", "read-logs",
    "read-fs", "alloc-exec", "alloc-node-exec", "alloc-lifecycle", "sentinel-override",
    "submit-recommendation", "csi-register-plugin", "csi-write-volume", "csi-read-volume",
    "csi-list-volume", "csi-mount-volume", "host-volume-create", "host-volume-register",
    "host-volume-read", "host-volume-write", "host-volume-delete", "list-scaling-policies",
    "read-scaling-policy", "read-job-scaling", "scale-job",
    *("register-job", "revert-job", "deregister-job", "purge-job", "evaluate-job",
      "plan-job", "tag-job-version", "stable-job", "fail-deployment", "pause-deployment",
      "promote-deployment", "unblock-deployment", "cancel-deployment",
      "set-alloc-health-deployment", "gc-allocation", "pause-allocation",
      "force-periodic-job", "delete-service-registration"),
)

#: Nomad's fine-grained job and deployment capabilities (split out of
#: ``submit-job``): every endpoint that asks for one also accepts
#: ``submit-job`` (Nomad's ``AllowNsOpAnyOf(ns, submit-job, <fine>)``), so
#: ``submit-job`` implies them all; each alone grants only its own RPC.
SUBMIT_JOB_IMPLIES: frozenset[str] = frozenset({
    "register-job", "revert-job", "deregister-job", "purge-job", "evaluate-job", "plan-job",
    "tag-job-version", "stable-job", "fail-deployment", "pause-deployment",
    "promote-deployment", "unblock-deployment", "cancel-deployment",
    "set-alloc-health-deployment",
})

#: Capabilities that imply others, as Nomad's endpoints accept them:
#: ``Job.Deregister`` without purge accepts ``purge-job`` as well as
#: ``deregister-job`` (``AllowNsOpAnyOf(ns, submit-job, purge-job,
#: deregister-job)``); with purge only ``submit-job`` or ``purge-job``.
IMPLIES: dict[str, frozenset[str]] = {
    "purge-job": frozenset({"deregister-job"}),
}

#: Nomad's namespace capabilities for objects or calls drover does not have
#: (logs, exec, CSI and host volumes, scaling policies, recommendations,
#: Sentinel, dispatch, periodic jobs, version tags, multiregion deployments,
#: service registrations, allocation GC and pause): accepted (a Nomad policy
#: carries over), granting nothing, with a warning when a policy names one.
#: A unit test checks it is exactly Nomad's list less what drover's RPCs ask
#: for (:data:`drover.acl.table.TABLE`).
NO_OBJECT: frozenset[str] = frozenset({
    "parse-job", "dispatch-job", "read-logs", "read-fs", "alloc-exec", "alloc-node-exec",
    "sentinel-override", "submit-recommendation", "csi-register-plugin", "csi-write-volume",
    "csi-read-volume", "csi-list-volume", "csi-mount-volume", "host-volume-create",
    "host-volume-register", "host-volume-read", "host-volume-write", "host-volume-delete",
    "list-scaling-policies", "read-scaling-policy", "read-job-scaling", "tag-job-version",
    "stable-job", "unblock-deployment", "cancel-deployment", "gc-allocation",
    "pause-allocation", "force-periodic-job", "delete-service-registration",
})

#: Keys of a namespace rule Nomad has and drover ignores, with a warning
#: (``variables``: drover has no variables).
IGNORED_NAMESPACE_KEYS: tuple[str, ...] = ("variables",)

#: Nomad's rule blocks for objects drover does not have: accepted (a Nomad
#: policy carries over) and ignored, with a warning.
IGNORED_BLOCKS: tuple[str, ...] = ("node_pool", "host_volume")

#: drover's earlier names, read as Nomad's with a deprecation warning.
DEPRECATED_CAPABILITIES: dict[str, str] = {
    "list-evals": "read-job",
    "deployment-write": "submit-job",
}

# Nomad's expandNamespacePolicy.
_READ = frozenset({
    "list-jobs", "parse-job", "read-job", "csi-list-volume", "csi-read-volume",
    "read-job-scaling", "list-scaling-policies", "read-scaling-policy", "host-volume-read",
})
_WRITE = _READ | {
    "scale-job", "submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-exec",
    "alloc-lifecycle", "csi-mount-volume", "csi-write-volume", "submit-recommendation",
    "host-volume-create",
}
_SCALE = frozenset({
    "list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job",
    "read-job", "submit-recommendation",
})
_EXPAND = {"read": _READ, "write": _WRITE, "scale": _SCALE, DENY: frozenset({DENY})}

GLOBAL_AREAS: tuple[str, ...] = ("operator", "node", "scheduler")
#: Nomad's other global rules: accepted (a Nomad policy carries over),
#: checked, and granting nothing drover asks for.
NOMAD_ONLY_AREAS: tuple[str, ...] = ("agent", "quota", "plugin")

_MAX_DOCUMENT = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_GLOB = re.compile(r"^[A-Za-z0-9_.*-]{1,128}$")


class Level(enum.IntEnum):
    """A global rule's level. Merging takes the maximum, except that
    ``DENY`` wins over everything."""

    NONE = 0
    READ = 1
    WRITE = 2
    DENY = 3

    @classmethod
    def parse(cls, word: str, where: str) -> Level:
        try:
            return {"read": cls.READ, "write": cls.WRITE, DENY: cls.DENY}[word]
        except (KeyError, TypeError):
            raise InvalidPolicy(f"{where}: policy must be read, write or deny, "
                                f"got {_show(word)}", metadata={"field": where}) from None


@dataclass(frozen=True, slots=True)
class NamespaceRule:
    glob: str
    capabilities: frozenset[str]  # expanded: coarse policy folded in

    @property
    def denies(self) -> bool:
        return DENY in self.capabilities


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    namespaces: tuple[NamespaceRule, ...]
    globals: tuple[tuple[str, Level], ...]  # (area, level) for areas given
    #: What the document should change (deprecated names it used).
    warnings: tuple[str, ...] = ()

    def level(self, area: str) -> Level:
        return dict(self.globals).get(area, Level.NONE)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_policy_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise InvalidPolicy(
            f"policy name {_show(name)} must be 1-128 letters, digits, '_', '.' or '-'",
            metadata={"field": "name"})
    return name


def _namespace_rule(glob: Any, body: Any, warnings: list[str]) -> NamespaceRule:
    where = f"namespace.{glob}"
    if not isinstance(glob, str) or not _GLOB.match(glob):
        raise InvalidPolicy(f"namespace glob {_show(glob)} must be letters, digits, "
                            "'_', '.', '-' and '*'", metadata={"field": "namespace"})
    if not isinstance(body, Mapping):
        raise InvalidPolicy(f"{where}: expected a mapping with policy and/or capabilities",
                            metadata={"field": where})
    unknown = set(body) - {"policy", "capabilities", *IGNORED_NAMESPACE_KEYS}
    if unknown:
        raise InvalidPolicy(f"{where}: unknown key(s) {sorted(map(str, unknown))}; "
                            "expected policy, capabilities, "
                            + ", ".join(IGNORED_NAMESPACE_KEYS), metadata={"field": where})
    warnings.extend(f"{where}.{key}: ignored (drover has no {key}); the rest of the "
                    "policy applies" for key in IGNORED_NAMESPACE_KEYS if key in body)
    caps: set[str] = set()
    if "policy" in body:
        word = body["policy"]
        if word not in _EXPAND:
            raise InvalidPolicy(f"{where}.policy must be read, write, scale or deny, "
                                f"got {_show(word)}",
                                metadata={"field": f"{where}.policy"})
        caps |= _EXPAND[word]
    listed = body.get("capabilities", [])
    if not isinstance(listed, list):
        raise InvalidPolicy(f"{where}.capabilities must be a list",
                            metadata={"field": f"{where}.capabilities"})
    for i, cap in enumerate(listed):
        if isinstance(cap, str) and cap in DEPRECATED_CAPABILITIES:
            now = DEPRECATED_CAPABILITIES[cap]
            warnings.append(f"{where}.capabilities[{i}]: {cap!r} is deprecated; it is read "
                            f"as Nomad's {now!r}: write {now!r}")
            cap = now
        if cap not in NAMESPACE_CAPABILITIES:
            raise InvalidPolicy(
                f"{where}.capabilities[{i}]: unknown capability {_show(cap)}; known: "
                + ", ".join(NAMESPACE_CAPABILITIES),
                metadata={"field": f"{where}.capabilities"})
        if cap in NO_OBJECT:
            warnings.append(f"{where}.capabilities[{i}]: {cap!r} grants nothing in drover "
                            "(no such object or call); the rest of the policy applies")
        caps.add(cap)
    if not caps and not any(key in body for key in IGNORED_NAMESPACE_KEYS):
        raise InvalidPolicy(f"{where}: give a policy or at least one capability",
                            metadata={"field": where})
    if DENY in caps:
        caps = {DENY}
    elif "submit-job" in caps:
        caps |= SUBMIT_JOB_IMPLIES
    for cap in list(caps):
        caps |= IMPLIES.get(cap, frozenset())
    return NamespaceRule(glob, frozenset(caps))


def parse_policy(name: str, text: str) -> Policy:
    """Parse and validate a YAML or JSON rules document."""
    validate_policy_name(name)
    if len(text.encode()) > _MAX_DOCUMENT:
        raise InvalidPolicy(f"policy rules exceed {_MAX_DOCUMENT} bytes",
                            metadata={"field": "rules"})
    try:
        doc = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InvalidPolicy(f"policy {name!r} is not valid YAML or JSON{at}",
                            metadata={"field": "rules"}) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise InvalidPolicy(f"policy {name!r} must be a mapping of rules",
                            metadata={"field": "rules"})
    unknown = set(doc) - {"namespace", *GLOBAL_AREAS, *NOMAD_ONLY_AREAS, *IGNORED_BLOCKS}
    if unknown:
        raise InvalidPolicy(f"unknown rule(s) {sorted(map(str, unknown))}; expected namespace, "
                            + ", ".join((*GLOBAL_AREAS, *NOMAD_ONLY_AREAS, *IGNORED_BLOCKS)),
                            metadata={"field": "rules"})
    namespaces = doc.get("namespace") or {}
    if not isinstance(namespaces, Mapping):
        raise InvalidPolicy("namespace must map namespace globs to rules",
                            metadata={"field": "namespace"})
    warnings: list[str] = [f"{block}: ignored (drover has no {block.replace('_', ' ')}s); "
                           "the rest of the policy applies"
                           for block in IGNORED_BLOCKS if block in doc]
    rules = tuple(_namespace_rule(g, b, warnings) for g, b in namespaces.items())
    levels = []
    for area in (*GLOBAL_AREAS, *NOMAD_ONLY_AREAS):
        if area not in doc:
            continue
        body = doc[area]
        if not isinstance(body, Mapping) or set(body) != {"policy"}:
            raise InvalidPolicy(f"{area} must be {{policy: read|write|deny}}",
                                metadata={"field": area})
        levels.append((area, Level.parse(body["policy"], area)))
    return Policy(name, rules, tuple(levels), tuple(warnings))
