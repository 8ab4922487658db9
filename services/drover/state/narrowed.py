"""A read narrowed to the namespaces the caller may see (Nomad's filtering).

:class:`Narrowed` wraps a request's compiled filter (or none) so the
paginator accepts only objects of namespaces the ACL predicate allows
(:mod:`drover.acl.visibility`). It adds no index constraint and is never
``exact`` (a count then walks the objects instead of trusting bucket
sizes), and keeps the inner filter's expression, so page tokens bind to the
request as before. Kinds without a namespace (nodes) are not narrowed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from drover.acl.visibility import NamespacePredicate, visible_namespaces


class Narrowed:
    def __init__(self, inner: Any, namespace_of: Callable[[Any], Hashable],
                 allowed: NamespacePredicate) -> None:
        self._inner, self._namespace_of, self._allowed = inner, namespace_of, allowed

    @property
    def expression(self) -> str:
        return str(self._inner.expression) if self._inner is not None else ""

    @property
    def constraints(self) -> Mapping[str, frozenset[Hashable]]:
        return self._inner.constraints if self._inner is not None else {}

    @property
    def exact(self) -> bool:
        return False

    def matches(self, item: object) -> bool:
        if not self._allowed(str(self._namespace_of(item))):
            return False
        return self._inner is None or bool(self._inner.matches(item))


def narrow(matcher: Any, source: Any) -> Any:
    """``matcher`` narrowed for the current call, if its ACL asks for it."""
    allowed = visible_namespaces()
    if allowed is None or "namespace" not in source.fields:
        return matcher
    return Narrowed(matcher, source.getter("namespace"), allowed)
