import pytest

from drover.errors import InvalidArgument
from drover.paging import Order, PagingDefaults, parse_order_by, resolve_page_size


def test_page_size_zero_means_default():
    assert resolve_page_size(0) == 100
    assert resolve_page_size(0, PagingDefaults(default=5, maximum=10)) == 5


def test_page_size_above_maximum_is_clamped():
    assert resolve_page_size(5000) == 1000
    assert resolve_page_size(7) == 7


def test_negative_page_size_names_the_field():
    with pytest.raises(InvalidArgument) as err:
        resolve_page_size(-1)
    assert err.value.reason == "INVALID_ARGUMENT"
    assert err.value.metadata == {"field": "page_size"}
    assert "page_size" in err.value.message


@pytest.mark.parametrize("text", ["", "create_index", "create_index asc", "  create_index   asc "])
def test_ascending_orders(text):
    assert parse_order_by(text) is Order.ASCENDING


def test_descending_order():
    assert parse_order_by("create_index desc") is Order.DESCENDING
    assert Order.DESCENDING.descending and not Order.ASCENDING.descending


@pytest.mark.parametrize("text", ["name", "create_index up", "modify_index desc", "desc"])
def test_other_orders_are_refused_with_what_is_accepted(text):
    with pytest.raises(InvalidArgument) as err:
        parse_order_by(text)
    assert err.value.metadata == {"field": "order_by"}
    assert '"create_index desc"' in err.value.message


def test_defaults_are_validated():
    with pytest.raises(ValueError):
        PagingDefaults(default=10, maximum=5)
    with pytest.raises(ValueError):
        PagingDefaults(scan_budget=0)
