"""Opaque page tokens, HMAC-signed and bound to the request they continue.

Stand-in seam until :mod:`drover.paging` ships the shared token codec. A
token carries the cursor (the last examined ``(create_index, key)``) and a
digest of the request context (method, namespace, prefix, filter, order,
scope); the HMAC key is shared by every replica (stored in etcd), so any
replica continues any other's pages. Tampered, foreign (another method or
cluster) or mismatched (another filter/order/...) tokens are all
``INVALID_PAGE_TOKEN``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from drover.paging.errors import InvalidPageToken
from drover.state.tables import Order

_MAC = 16


def context_digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


class TokenCodec:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("page token key must be at least 16 bytes")
        self._key = key

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC]

    def encode(self, cursor: Order, context: str) -> str:
        body = json.dumps([cursor[0], cursor[1], context], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(body + self._mac(body)).decode().rstrip("=")

    def decode(self, token: str, context: str) -> Order:
        bad = InvalidPageToken(
            "page_token is not valid for this request (altered, from another request or "
            "method, or its filter/order/namespace changed); start again without a token",
            metadata={"field": "page_token"},
        )
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError:
            raise bad from None
        body, mac = raw[:-_MAC], raw[-_MAC:]
        if len(raw) <= _MAC or not hmac.compare_digest(mac, self._mac(body)):
            raise bad
        try:
            create, key, ctx = json.loads(body)
        except (ValueError, TypeError):
            raise bad from None
        if ctx != context or not isinstance(create, int) or not isinstance(key, str):
            raise bad
        return (create, key)
