"""A compiled ACL: the policies of one identity merged (pure).

Semantics follow Nomad's ``acl`` package:

* merging several policies unions each glob's capabilities, but a ``deny``
  for a glob in any policy makes that glob deny everything (deny wins);
  global rules take the highest level, except that ``deny`` wins;
* a namespace is governed by its *closest* glob only: an exact name first,
  else the matching glob with the fewest characters left to the wildcards
  (ties: the lexically smaller glob, so the choice is deterministic);
* nothing matches: denied (default deny);
* a request for *all* namespaces (``*``) is allowed only when the
  capability holds under every glob the identity has, ``*`` included, so
  no namespace the identity may not see is listed through it;
* management identities may do everything.
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from drover.acl.policy import DENY, Level, NamespaceRule, Policy

__all__ = ["ALL_NAMESPACES", "Acl", "Identity", "IdentityKind"]

ALL_NAMESPACES = "*"


@lru_cache(maxsize=4096)
def _glob_matches(glob: str, namespace: str) -> bool:
    # Only '*' is special in drover globs; escape fnmatch's other wildcards.
    pattern = glob.replace("[", "[[]").replace("?", "[?]")
    return fnmatch.fnmatchcase(namespace, pattern)


@dataclass(frozen=True)
class Acl:
    """What one identity may do."""

    management: bool = False
    namespaces: tuple[NamespaceRule, ...] = ()
    levels: tuple[tuple[str, Level], ...] = ()
    _closest: dict[str, NamespaceRule | None] = field(default_factory=dict, compare=False,
                                                      repr=False)

    @classmethod
    def compile(cls, policies: Iterable[Policy], *, management: bool = False) -> Acl:
        merged: dict[str, set[str]] = {}
        levels: dict[str, Level] = {}
        for policy in policies:
            for rule in policy.namespaces:
                merged.setdefault(rule.glob, set()).update(rule.capabilities)
            for area, level in policy.globals:
                old = levels.get(area, Level.NONE)
                levels[area] = Level.DENY if Level.DENY in (old, level) else max(old, level)
        rules = tuple(
            NamespaceRule(glob, frozenset({DENY}) if DENY in caps else frozenset(caps))
            for glob, caps in sorted(merged.items())
        )
        return cls(management=management, namespaces=rules, levels=tuple(sorted(levels.items())))

    def _rule_for(self, namespace: str) -> NamespaceRule | None:
        if namespace in self._closest:
            return self._closest[namespace]
        best: tuple[int, str] | None = None
        found: NamespaceRule | None = None
        for rule in self.namespaces:
            if rule.glob == namespace:
                found = rule
                break
            if "*" in rule.glob and _glob_matches(rule.glob, namespace):
                score = (len(namespace) - len(rule.glob.replace("*", "")), rule.glob)
                if best is None or score < best:
                    best, found = score, rule
        if len(self._closest) < 1024:  # memo; bounded against many namespaces
            self._closest[namespace] = found
        return found

    def allow_namespace(self, namespace: str, capability: str) -> bool:
        if self.management:
            return True
        if namespace == ALL_NAMESPACES:
            star = [r for r in self.namespaces if r.glob == ALL_NAMESPACES]
            return bool(star) and all(capability in r.capabilities and not r.denies
                                      for r in self.namespaces)
        rule = self._rule_for(namespace)
        return rule is not None and not rule.denies and capability in rule.capabilities

    def allow_any_namespace(self, capability: str) -> bool:
        """Whether ``capability`` holds in at least one namespace (a stream
        of every namespace then delivers only those: :mod:`drover.acl.topics`)."""
        if self.management:
            return True
        return any(capability in r.capabilities and not r.denies for r in self.namespaces)

    def level(self, area: str) -> Level:
        return dict(self.levels).get(area, Level.NONE)

    def allow_global(self, area: str, needed: Level) -> bool:
        if self.management:
            return True
        have = self.level(area)
        return have != Level.DENY and have >= needed


class IdentityKind(enum.Enum):
    ANONYMOUS = "anonymous"
    CLIENT = "client"
    MANAGEMENT = "management"
    #: Another drover service (broker, watcher, proxy) calling with the
    #: server secret derived from the cluster secret.
    SERVER = "server"


@dataclass(frozen=True)
class Identity:
    """Who a call is from, resolved from its token (never holds the secret)."""

    kind: IdentityKind
    acl: Acl
    accessor_id: str = ""
    name: str = ""

    @property
    def describe(self) -> str:
        if self.kind in (IdentityKind.ANONYMOUS, IdentityKind.SERVER):
            return self.kind.value
        return f"token {self.accessor_id}" + (f" ({self.name})" if self.name else "")
