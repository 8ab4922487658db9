"""Lists across all namespaces return what the token may read (Nomad filters).

A List or Count for namespace ``*`` by a token that holds the capability in
some namespaces but not all is not refused: it is answered with the objects
of the namespaces the token may use, the others left out, as Nomad's list
endpoints filter by ``allowNsOp`` per object. A token that holds the
capability in *no* namespace is still refused (PERMISSION_DENIED), so a
token without rights learns it instead of reading an empty list.

The authorization check (:func:`drover.acl.table.authorize`) decides and
returns the predicate; the interceptor puts it in :data:`VISIBLE` for the
call, and the state service's reads apply it per object
(``drover.state.reads``). Only reads are ever narrowed: a write for ``*``
still needs the capability in every namespace.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from drover.acl.acl import ALL_NAMESPACES, Acl

__all__ = ["VISIBLE", "NamespacePredicate", "readable", "visible_namespaces"]

NamespacePredicate = Callable[[str], bool]

#: The namespaces the current call may see (None: every one it names).
VISIBLE: contextvars.ContextVar[NamespacePredicate | None] = contextvars.ContextVar(
    "drover_acl_visible", default=None)


def readable(acl: Acl, capability: str) -> NamespacePredicate | None:
    """The predicate narrowing a ``*`` read to the namespaces where ``acl``
    holds ``capability``; None when it holds it in none (refuse)."""
    if not any(capability in r.capabilities and not r.denies for r in acl.namespaces):
        return None

    def allowed(namespace: str) -> bool:
        return namespace != ALL_NAMESPACES and acl.allow_namespace(namespace, capability)

    return allowed


def visible_namespaces() -> NamespacePredicate | None:
    """The current call's predicate (None: no narrowing)."""
    return VISIBLE.get()
