"""Telling a TLS mismatch from a server that is down, in one line.

gRPC reports both as UNAVAILABLE ("Socket closed", "failed to connect"),
so after a connection failure the CLI and the services (for etcd) ask
:func:`diagnose` once: a short blocking TLS handshake with the standard
``ssl`` module against the same address says whether the peer speaks TLS
and whether our CA trusts it. Only on the error path; never on a call.
"""

from __future__ import annotations

import socket
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # drover.config imports drover.coord.keys
    from drover.config import TlsFiles

__all__ = ["diagnose"]


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def _handshake(host: str, port: int, ctx: ssl.SSLContext, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        tls.do_handshake()


def diagnose(address: str, tls: TlsFiles | None, *, what: str = "the server",
             flag: str = "--tls-ca", timeout: float = 1.0) -> str | None:
    """A one-line explanation if the failure at ``address`` is a TLS
    mismatch; None when it is not (or cannot be told)."""
    try:
        host, port = _split(address)
    except ValueError:
        return None
    enabled = tls is not None and tls.enabled
    loose = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    loose.check_hostname = False
    loose.verify_mode = ssl.CERT_NONE
    try:
        _handshake(host, port, loose, timeout)
    except ssl.SSLError:
        if enabled:
            return (f"TLS mismatch: {what} at {address} does not speak TLS, but TLS is "
                    f"configured ({flag}); drop the TLS options or enable TLS there")
        return None
    except OSError:
        return None  # not listening / unreachable: not a TLS question
    if not enabled:
        return (f"TLS mismatch: {what} at {address} speaks TLS but no CA is configured; "
                f"pass {flag} (and a client certificate if it requires one)")
    assert tls is not None
    if tls.ca:
        strict = ssl.create_default_context(cafile=tls.ca)
        strict.check_hostname = False  # gRPC checks names; here only trust is asked
        try:
            _handshake(host, port, strict, timeout)
        except ssl.SSLCertVerificationError as e:
            return (f"TLS mismatch: the certificate of {what} at {address} is not trusted "
                    f"by {flag} ({e.verify_message})")
        except (ssl.SSLError, OSError):
            return None
    return None
