"""Identical re-create: a create retried with the same ids is OK, with
nothing written (README "Retrying safely").

A client whose create ended ``OUTCOME_UNKNOWN`` retries it with the same
ids; if the first attempt did apply, the object is stored as the client
sent it plus what the server sets on every write. :func:`same_as_stored`
tells such a retry from a *different* object under the same id (which
stays refused or compared as before: only an identical one is a no-op).

Server-set, so never a difference: the etcd indexes (``create_index``,
``modify_index``), the write times (``create_time``: an existing object
keeps its stored one whatever the request says; ``modify_time``: the
call's clock), and a ``job_modify_index`` the request left 0 (stored 0,
resolved on read to the txn's revision: :func:`drover.state.core.codec.decode_into`).

Judged on a fresh view only (:func:`identical_existing`): a replica's
cache that is behind could show an object since changed or deleted, and
answering "already there" on it would hide that.
"""

from __future__ import annotations

from typing import Any

from drover.errors import Conflict
from drover.state.core.view import Found, View
from drover.state.errors import Replan

_SERVER_SET = ("create_index", "modify_index", "create_time", "modify_time")


def _normal(msg: Any, fields: tuple[str, ...]) -> Any:
    out = type(msg)()
    out.CopyFrom(msg)
    for name in fields:
        if name in out.DESCRIPTOR.fields_by_name:
            out.ClearField(name)
    return out


def same_as_stored(new: Any, old: Found) -> bool:
    """Whether ``new`` (the request's object) is what ``old`` (the stored,
    decoded one) already is, save the server-set fields (module doc)."""
    fields: tuple[str, ...] = _SERVER_SET
    if "job_modify_index" in new.DESCRIPTOR.fields_by_name and not new.job_modify_index:
        fields = (*fields, "job_modify_index")
    return bool(_normal(new, fields) == _normal(old.obj, fields))


def identical_existing(view: View, kind: str, ns: str, oid: str, new: Any) -> bool:
    """True when ``kind/ns/oid`` exists on a FRESH view and equals ``new``
    (:func:`same_as_stored`). On a stale view an identical-looking object
    asks the shell to sync and plan again (:class:`Replan`): the fresh view
    decides. Absent or different: False (the caller's usual rule applies)."""
    found = view.get(kind, ns, oid)
    if found is None or not same_as_stored(new, found):
        return False
    if not view.fresh:
        raise Replan(Conflict(f"{kind} {ns}/{oid} exists; re-read to confirm it is unchanged"))
    return True
