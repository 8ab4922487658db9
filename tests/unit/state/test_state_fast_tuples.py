"""NamedTuples the hot paths build with ``tuple.__new__`` (no Python
``__new__`` call): that skips the defaults, so a field added to one of them
(even with a default) would silently give short tuples there (an
IndexError, or a wrong field, at the first read). This test names those
sites; change them with the fields."""

from __future__ import annotations

import pytest

from drover.coord.kv import KV, Compare, Put, WatchEvent
from drover.paging import Key
from drover.state.cache import Change
from drover.state.core.codec import ObjectKey
from drover.state.core.plan import Event

#: NamedTuple -> (its fields as the fast sites pass them, where they are)
FAST = {
    KV: (("key", "value", "create_revision", "mod_revision"),
         "coord/etcd_kv.py _EtcdWatch, state/cache.py apply_committed"),
    WatchEvent: (("kv", "deleted"),
                 "coord/etcd_kv.py _EtcdWatch, state/cache.py apply_committed and _apply_events"),
    Change: (("kind", "namespace", "id", "revision", "deleted", "value", "create_revision"),
             "state/cache.py _apply_events"),
    ObjectKey: (("kind", "namespace", "id"), "state/codec.py KeyCodec.parse"),
    Compare: (("key", "target", "value"), "state/core/plan.py PlanBuilder.put"),
    Put: (("key", "value", "lease"), "state/core/plan.py PlanBuilder.put"),
    Event: (("kind", "namespace", "id", "op"), "state/core/plan.py PlanBuilder.put"),
    Key: (("create_index", "id"), "state/tables.py Tables.stage"),
}


@pytest.mark.parametrize("cls", list(FAST), ids=lambda c: c.__name__)
def test_fields_are_what_the_tuple_new_sites_pass(cls: type) -> None:
    fields, sites = FAST[cls]
    assert cls._fields == fields, f"{cls.__name__} changed: update {sites}"  # type: ignore[attr-defined]
