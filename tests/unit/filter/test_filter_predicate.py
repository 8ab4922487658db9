"""The fast predicate agrees with CEL on its subset and declines the rest."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drover.filter import FieldKind, FieldType, FilterCompiler, Schema

STATUSES = ("pending", "complete", "failed")


@dataclass(frozen=True)
class Rec:
    id: str
    status: str
    priority: int
    weight: float
    drain: bool
    created: int = 0


TYPES = {
    "id": FieldType(FieldKind.STRING), "status": FieldType.enum(STATUSES),
    "priority": FieldType(FieldKind.INT), "weight": FieldType(FieldKind.DOUBLE),
    "drain": FieldType(FieldKind.BOOL), "created": FieldType(FieldKind.INT),
}  # fmt: skip
SCHEMA = Schema.for_attributes(TYPES)
FAST_NAMES = ("id", "status", "priority", "weight", "drain")
FAST = FilterCompiler(SCHEMA, fast_fields={n: operator.attrgetter(n) for n in FAST_NAMES})
SLOW = FilterCompiler(SCHEMA)

IN_SUBSET = [
    'status == "pending"', 'status != "failed" && priority > 50', "priority <= -1 || drain",
    '!(status in ["pending", "failed"]) || weight >= 0.5', "50 < priority", "!drain",
    'id.startsWith("a") && !id.endsWith("z") || id.contains("bc")', "true && !!drain",
    "(priority > 10 && (weight < 1.5 || drain == false)) || priority == 0x10",
    'status in ["complete"] && drain != true', "weight != 0.0", "false || priority >= 99",
]
OUTSIDE = [
    "priority + 1 > 50", "size(id) > 2", "created > 5", "priority > 5.5", "weight > 1",
    "drain ? priority > 1 : false", "!drain == true", "priority > 5u", 'id.matches("a.*")',
]

recs = st.builds(Rec, id=st.text("abcz", max_size=4), status=st.sampled_from(STATUSES),
                 priority=st.integers(-3, 120), weight=st.floats(-2, 2, allow_nan=False),
                 drain=st.booleans())  # fmt: skip


@pytest.mark.parametrize("expr", IN_SUBSET)
def test_subset_compiles_to_a_fast_predicate(expr: str) -> None:
    assert FAST.compile(expr).fast is not None


@pytest.mark.parametrize("expr", OUTSIDE)
def test_everything_else_keeps_cel(expr: str) -> None:
    flt = FAST.compile(expr)
    assert flt.fast is None
    rec = Rec("abc", "pending", 7, 1.0, True, created=9)
    assert flt.matches(rec) == SLOW.compile(expr).matches(rec)


@settings(max_examples=200, deadline=None)
@given(rec=recs, expr=st.sampled_from(IN_SUBSET))
def test_fast_predicate_agrees_with_cel(rec: Rec, expr: str) -> None:
    assert FAST.compile(expr).matches(rec) is SLOW.compile(expr).matches(rec)


def test_load_turns_items_into_objects_for_cel() -> None:
    wrapped = FilterCompiler(SCHEMA, fast_fields={"priority": lambda t: t[0].priority},
                             load=lambda t: t[0])
    rec = Rec("abc", "pending", 7, 1.0, True, created=9)
    assert wrapped.compile("priority == 7").matches((rec,)) is True
    assert wrapped.compile("created == 9 && priority == 7").matches((rec,)) is True
    assert wrapped.compile("created == 8").matches((rec,)) is False
