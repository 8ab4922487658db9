"""Opaque, signed page tokens bound to the request that produced them.

A token carries the cursor -- the :class:`Key` of the last object the
previous page examined -- and is valid only for the same request: the same
RPC method, filter, order, namespace, prefix, page size and scope. The
binding is not stored in the token; it is fed into an HMAC-SHA256 tag
(truncated to 96 bits) together with the cursor, so a token replayed with
any other binding, altered in any bit, or minted under another key (another
cluster) fails verification with :class:`InvalidPageToken`. Any replica
holding the same key accepts any replica's tokens: no server-side state.

To say *what* mismatched, the token also carries a 16-bit keyed digest per
binding field; when the tag fails, the fields whose digests differ are named
(``metadata['mismatch']``). These digests only explain a failure, they never
decide one, so their collisions cannot let a token through.

Layout (urlsafe base64 without padding, ~64 characters for a UUID id)::

    version(1) flags(1) create_index(varint) id(16 bytes if UUID, else
    varint length + UTF-8) field digests(2 x 7) tag(12)

The default key, :data:`DEFAULT_TOKEN_KEY`, is public: it keeps tokens opaque
and bound, but only a per-cluster key makes them unforgeable and
cluster-specific: every service passes the cluster secret named
:data:`CLUSTER_SECRET` (one key for the whole cluster).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from dataclasses import dataclass

from drover.paging.errors import InvalidPageToken
from drover.paging.index import Key
from drover.paging.request import Order

__all__ = ["CLUSTER_SECRET", "DEFAULT_TOKEN_KEY", "PageTokenCodec", "TokenBinding"]

DEFAULT_TOKEN_KEY = b"drover/page-token/v1: public default, pass a cluster key"
#: The name of the cluster secret that signs page tokens.
CLUSTER_SECRET = "page-token"

_VERSION = 1
_FLAG_UUID = 0x01
_DIGEST = 2
_TAG = 12
_FIELD = "page_token"
_BASE64 = re.compile(r"[A-Za-z0-9_-]+")
_START_AGAIN = "; start again without a page token"


@dataclass(frozen=True)
class TokenBinding:
    """Everything about a request that a page token must match."""

    method: str
    filter: str = ""
    order: Order = Order.ASCENDING
    namespace: str | None = None
    prefix: str = ""
    page_size: int = 0
    scope: tuple[tuple[str, str], ...] = ()
    #: Request fields that change what a page *means* without narrowing the
    #: walk (``dry_run``: a token of a preview must not drive a real delete);
    #: each is its own part, so a mismatch names it.
    options: tuple[tuple[str, str], ...] = ()

    def parts(self) -> tuple[tuple[str, bytes], ...]:
        """(field name, canonical bytes) in a fixed order."""
        namespace = b"\x00" if self.namespace is None else b"\x01" + self.namespace.encode()
        scope = b"".join(_chunk(k.encode()) + _chunk(v.encode()) for k, v in sorted(self.scope))
        return (
            ("method", self.method.encode()),
            ("filter", self.filter.encode()),
            ("order_by", self.order.value.encode()),
            ("namespace", namespace),
            ("prefix", self.prefix.encode()),
            ("page_size", str(self.page_size).encode()),
            ("scope", scope),
            *((name, value.encode()) for name, value in sorted(self.options)),
        )


class PageTokenCodec:
    """Encode and verify page tokens under one key (shared by all replicas)."""

    def __init__(self, key: bytes | str = DEFAULT_TOKEN_KEY) -> None:
        raw = key.encode() if isinstance(key, str) else bytes(key)
        if not raw:
            raise ValueError("the page token key must not be empty")
        # Separate subkeys so the diagnostic digests reveal nothing about the tag.
        self._mac_key = hmac.new(raw, b"drover page token tag", hashlib.sha256).digest()
        self._digest_key = hmac.new(raw, b"drover page token digest", hashlib.sha256).digest()

    def encode(self, binding: TokenBinding, cursor: Key) -> str:
        body = bytearray((_VERSION, 0))
        body += _varint(cursor.create_index)
        as_uuid = _uuid_bytes(cursor.id)
        if as_uuid is not None:
            body[1] |= _FLAG_UUID
            body += as_uuid
        else:
            body += _chunk(cursor.id.encode())
        for _, value in binding.parts():
            body += self._digest(value)
        body += self._tag(bytes(body), binding)
        return base64.urlsafe_b64encode(bytes(body)).rstrip(b"=").decode("ascii")

    def decode(self, token: str, binding: TokenBinding) -> Key:
        """The cursor in ``token``, if it was issued for ``binding`` under this key."""
        raw = _unbase64(token)
        if len(raw) < 3 + _DIGEST * len(binding.parts()) + _TAG:
            raise _malformed()
        if raw[0] != _VERSION:
            raise InvalidPageToken(
                f"page token version {raw[0]} is not supported{_START_AGAIN}",
                metadata={"field": _FIELD},
            )
        body, tag = raw[:-_TAG], raw[-_TAG:]
        if not hmac.compare_digest(tag, self._tag(body, binding)):
            raise self._rejection(body, binding)
        return self._cursor(body)

    # -- internals ------------------------------------------------------------

    def _tag(self, body: bytes, binding: TokenBinding) -> bytes:
        mac = hmac.new(self._mac_key, body, hashlib.sha256)
        for _, value in binding.parts():
            mac.update(_chunk(value))
        return mac.digest()[:_TAG]

    def _digest(self, value: bytes) -> bytes:
        return hashlib.blake2b(value, digest_size=_DIGEST, key=self._digest_key).digest()

    def _rejection(self, body: bytes, binding: TokenBinding) -> InvalidPageToken:
        parts = binding.parts()
        start = len(body) - _DIGEST * len(parts)
        mismatched = [
            name
            for i, (name, value) in enumerate(parts)
            if body[start + i * _DIGEST : start + (i + 1) * _DIGEST] != self._digest(value)
        ]
        if mismatched and len(mismatched) < len(parts):
            return InvalidPageToken(
                "page token was issued for a different request: "
                f"{', '.join(mismatched)} differ{_START_AGAIN}",
                metadata={"field": _FIELD, "mismatch": ",".join(mismatched)},
            )
        return InvalidPageToken(
            "page token is not valid: it was altered or issued by another cluster"
            + _START_AGAIN,
            metadata={"field": _FIELD},
        )

    def _cursor(self, body: bytes) -> Key:
        try:
            create_index, pos = _read_varint(body, 2)
            if body[1] & _FLAG_UUID:
                id_ = str(uuid.UUID(bytes=body[pos : pos + 16]))
            else:
                length, pos = _read_varint(body, pos)
                id_ = body[pos : pos + length].decode()
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            raise _malformed() from exc
        return Key(create_index, id_)


def _malformed() -> InvalidPageToken:
    return InvalidPageToken(f"page token is malformed{_START_AGAIN}", metadata={"field": _FIELD})


def _unbase64(token: str) -> bytes:
    if not _BASE64.fullmatch(token):
        raise _malformed()
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError) as exc:
        raise _malformed() from exc
    # Unused low bits of the last character would otherwise let two strings
    # decode to the same token; accept only the canonical spelling.
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != token:
        raise _malformed()
    return raw


def _uuid_bytes(text: str) -> bytes | None:
    if len(text) != 36:
        return None
    try:
        value = uuid.UUID(text)
    except ValueError:
        return None
    return value.bytes if str(value) == text else None


def _varint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"cursor create_index must not be negative, got {n}")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _chunk(data: bytes) -> bytes:
    return _varint(len(data)) + data
