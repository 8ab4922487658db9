"""Opening etcd clients: one per purpose, TLS when configured.

aetcd only opens insecure channels and dials one ``host:port``. This module
builds the gRPC channel itself (secure when :class:`TlsFiles` are set, with
all endpoints in one target so gRPC fails over between them) and hands it
to an :class:`aetcd.Client` subclass.

Why one client per *purpose*: session keepalives and election reads must not
queue behind a bulk watch that streams a whole keyspace (a keepalive stuck
behind megabytes of events loses the lease). Callers open ``purpose="control"``
for session/election/membership and ``purpose="bulk"`` for watches. gRPC
Python shares TCP connections between channels with equal arguments, so each
purpose gets a local subchannel pool and its own user agent: separate
connections, separate HTTP/2 flow control.
"""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aetcd
import grpc
from aetcd import rpc

from drover.coord.errors import EtcdUnavailable

if TYPE_CHECKING:  # drover.config imports drover.coord.keys: no runtime cycle
    from drover.config import EtcdSettings, TlsFiles

__all__ = ["EtcdClient", "channel_target", "connect", "credentials"]

# Keepalive pings detect a dead TCP peer even when no call is in flight.
_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    # etcd refuses requests over its --max-request-bytes (1.5 MiB) anyway.
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.use_local_subchannel_pool", 1),
)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def channel_target(endpoints: tuple[str, ...]) -> str:
    """A gRPC target for all endpoints when they are IP literals (gRPC then
    tries them in order), else the first endpoint (DNS resolves it)."""
    if not endpoints:
        raise ValueError("at least one etcd endpoint is required")
    hosts = [ep.rpartition(":")[0] for ep in endpoints]
    if len(endpoints) > 1 and all(_is_ip(h) and ":" not in h.strip("[]") for h in hosts):
        return "ipv4:" + ",".join(endpoints)
    return endpoints[0]


def credentials(tls: TlsFiles) -> grpc.ChannelCredentials:
    def read(path: str) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return grpc.ssl_channel_credentials(
        root_certificates=read(tls.ca),
        private_key=read(tls.key),
        certificate_chain=read(tls.cert),
    )


class EtcdClient(aetcd.Client):
    """An aetcd client whose channel is built here (TLS, several endpoints)."""

    def __init__(
        self,
        target: str,
        *,
        creds: grpc.ChannelCredentials | None,
        purpose: str,
        timeout: float | None = None,
    ) -> None:
        super().__init__(host=target, port=0, timeout=timeout)  # type: ignore[arg-type]
        self.target = target
        self.purpose = purpose
        self._creds = creds

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        options = (*_CHANNEL_OPTIONS, ("grpc.primary_user_agent", f"drover-coord-{self.purpose}"))
        if self._creds is not None:
            self.channel = rpc.secure_channel(self.target, self._creds, options=options)
        else:
            self.channel = rpc.insecure_channel(self.target, options=options)
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self.watchstub = rpc.WatchStub(self.channel)
        self._watcher = aetcd.Watcher(self.watchstub, timeout=self._timeout, metadata=None)
        self._connected.set()


async def connect(settings: EtcdSettings, *, purpose: str) -> EtcdClient:
    """An open client for ``purpose`` ("control", "bulk", ...).

    Waits up to ``settings.dial_timeout`` for the channel to be ready so a
    wrong endpoint fails here, not at the first call.
    """
    creds = credentials(settings.tls) if settings.tls.enabled else None
    client = EtcdClient(channel_target(settings.endpoints), creds=creds, purpose=purpose)
    await client.connect()
    assert client.channel is not None
    try:
        async with asyncio.timeout(settings.dial_timeout):
            await client.channel.channel_ready()
    except TimeoutError:
        await client.close()
        raise EtcdUnavailable(
            f"etcd at {','.join(settings.endpoints)} not reachable within "
            f"{settings.dial_timeout}s ({purpose} client)"
        ) from None
    return client

