import base64
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drover.errors import InvalidArgument
from drover.paging import InvalidPageToken, Key, Order, PageTokenCodec, TokenBinding

BINDING = TokenBinding(
    method="ListEvaluations", filter='status == "pending"', order=Order.ASCENDING,
    namespace="default", prefix="", page_size=100, scope=(("job_id", "web"),),
)  # fmt: skip
CURSOR = Key(4711, str(uuid.UUID(int=42)))


def test_round_trip_and_short_urlsafe_tokens():
    codec = PageTokenCodec(b"cluster-a")
    token = codec.encode(BINDING, CURSOR)
    assert codec.decode(token, BINDING) == CURSOR
    assert "=" not in token and "+" not in token and "/" not in token
    assert len(token) <= 70


def test_non_uuid_ids_round_trip():
    codec = PageTokenCodec()
    for id_ in ["web", "default/web", "ü-ñ", "", "A" * 300]:
        cursor = Key(2**40, id_)
        assert codec.decode(codec.encode(BINDING, cursor), BINDING) == cursor


def test_invalid_page_token_is_an_invalid_argument():
    assert issubclass(InvalidPageToken, InvalidArgument)
    assert InvalidPageToken.reason == "INVALID_PAGE_TOKEN"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"method": "ListJobs"}, "method"),
        ({"filter": 'status == "failed"'}, "filter"),
        ({"order": Order.DESCENDING}, "order_by"),
        ({"namespace": None}, "namespace"),
        ({"namespace": "other"}, "namespace"),
        ({"prefix": "ab"}, "prefix"),
        ({"page_size": 7}, "page_size"),
        ({"scope": (("job_id", "api"),)}, "scope"),
    ],
)
def test_mismatched_binding_is_rejected_naming_the_field(change, field):
    codec = PageTokenCodec(b"k")
    token = codec.encode(BINDING, CURSOR)
    other = TokenBinding(**{**BINDING.__dict__, **change})
    with pytest.raises(InvalidPageToken) as err:
        codec.decode(token, other)
    assert err.value.metadata["mismatch"] == field
    assert field in err.value.message
    assert err.value.metadata["field"] == "page_token"


def test_token_from_another_cluster_key_is_rejected():
    token = PageTokenCodec(b"cluster-a").encode(BINDING, CURSOR)
    with pytest.raises(InvalidPageToken) as err:
        PageTokenCodec(b"cluster-b").decode(token, BINDING)
    assert "another cluster" in err.value.message
    assert "mismatch" not in err.value.metadata


@pytest.mark.parametrize("token", ["", "!!!!", "abc", "a" * 10, "é", "AAAA" * 30])
def test_garbage_is_rejected(token):
    with pytest.raises(InvalidPageToken):
        PageTokenCodec().decode(token, BINDING)


def test_non_canonical_base64_spelling_is_rejected():
    codec = PageTokenCodec()
    token = codec.encode(BINDING, Key(5, "x"))
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert len(raw) % 3 != 0  # the last character has unused bits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = token[:-1] + alphabet[alphabet.index(token[-1]) ^ 1]
    with pytest.raises(InvalidPageToken):
        codec.decode(twin, BINDING)


@given(st.data())
def test_any_byte_flip_is_rejected(data):
    codec = PageTokenCodec(b"k")
    cursor = Key(data.draw(st.integers(0, 2**63)), data.draw(st.text(max_size=40)))
    token = codec.encode(BINDING, cursor)
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    pos = data.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= data.draw(st.integers(1, 255))
    flipped = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(InvalidPageToken):
        codec.decode(flipped, BINDING)


@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
def test_random_strings_are_rejected(token):
    with pytest.raises(InvalidPageToken):
        PageTokenCodec().decode(token, BINDING)
