"""Opening etcd clients: one per purpose, TLS when configured, one
health-checked channel per etcd member.

aetcd only opens insecure channels and dials one ``host:port``. This module
builds the gRPC channels itself (secure when :class:`TlsFiles` are set): one
per endpoint address (an IPv4 or IPv6 literal as given, a hostname resolved
to every address it has: one name per member or a headless Service with
several records), all held by an :class:`~drover.coord.pool.EndpointPool`
that probes them and routes calls to a healthy one (see that module for why
gRPC's pick-first is not enough). :class:`EtcdClient` is an
:class:`aetcd.Client` whose stubs always point at the endpoint in use.

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
import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aetcd
import grpc
from aetcd import rpc

from drover.coord.endpoints import HealthConfig
from drover.coord.errors import EtcdUnavailable
from drover.coord.pool import Endpoint, EndpointPool
from drover.tasks import cancel_and_wait

if TYPE_CHECKING:  # drover.config imports drover.coord.keys: no runtime cycle
    from drover.config import EtcdSettings, TlsFiles

__all__ = ["EtcdClient", "connect", "credentials", "resolve_endpoints", "split_endpoint"]

log = logging.getLogger(__name__)

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


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` -> (host without brackets, port)."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"etcd endpoint {endpoint!r} must be host:port ([v6]:port for IPv6)")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"etcd endpoint {endpoint!r}: unbalanced brackets")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"etcd endpoint {endpoint!r}: write an IPv6 address as [addr]:port")
    return host, int(port)


#: Seconds between re-resolutions of hostname endpoints.
DNS_REFRESH = 30.0


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _target(ip: str, port: int) -> str:
    """A gRPC target for one address (no DNS: the pool owns the choice)."""
    if ipaddress.ip_address(ip).version == 6:
        return f"ipv6:[{ip}]:{port}"
    return f"ipv4:{ip}:{port}"


async def resolve_endpoints(endpoints: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """Every address of every endpoint, as (name, gRPC target, host) triples.

    IP literals are taken as they are; a hostname is resolved (A and AAAA)
    and each address becomes an endpoint of its own, named ``host@ip:port``.
    A name that does not resolve is skipped with a warning; none resolving
    is :class:`EtcdUnavailable`.
    """
    if not endpoints:
        raise ValueError("at least one etcd endpoint is required")
    out: list[tuple[str, str, str]] = []
    loop = asyncio.get_running_loop()
    for ep in endpoints:
        host, port = split_endpoint(ep)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            try:
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as e:
                log.warning("etcd endpoint %s does not resolve: %s", ep, e)
                continue
            ips = list(dict.fromkeys(str(info[4][0]) for info in infos))
            for ip in ips:
                shown = f"[{ip}]" if ":" in ip else ip
                out.append((f"{host}@{shown}:{port}", _target(ip, port), host))
        else:
            out.append((ep, _target(host, port), host))
    names = [name for name, _, _ in out]
    out = [t for i, t in enumerate(out) if t[0] not in names[:i]]  # dedupe, keep order
    if not out:
        raise EtcdUnavailable(f"no etcd endpoint of {','.join(endpoints)} resolves")
    return out


def credentials(tls: TlsFiles) -> grpc.ChannelCredentials:
    def read(path: str) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return grpc.ssl_channel_credentials(
        root_certificates=read(tls.ca),
        private_key=read(tls.key),
        certificate_chain=read(tls.cert),
    )


class EtcdClient(aetcd.Client):
    """An aetcd client over an :class:`EndpointPool`: its stubs (and so
    aetcd's own methods) always address the endpoint in use."""

    def __init__(self, endpoints: tuple[str, ...], *, creds: grpc.ChannelCredentials | None,
                 purpose: str, health: HealthConfig | None = None,
                 timeout: float | None = None, dns_refresh: float = DNS_REFRESH) -> None:
        super().__init__(host=",".join(endpoints), port=0, timeout=timeout)  # type: ignore[arg-type]
        self.endpoints = endpoints
        self.purpose = purpose
        self._creds = creds
        self._health = health
        self._dns_refresh = dns_refresh
        self._refresher: asyncio.Task[None] | None = None
        self.pool: EndpointPool | None = None

    # aetcd assigns these in __init__/close; they are derived from the pool.
    def _init_channel_attrs(self) -> None:
        self.metadata = None
        self.auth_stub = None
        self._watcher = None

    def _stub(self, kind: str) -> Any:
        return None if self.pool is None else self.pool.current.stub(kind)

    @property  # type: ignore[override]
    def channel(self) -> grpc.aio.Channel | None:
        return None if self.pool is None else self.pool.current.channel

    @property  # type: ignore[override]
    def kvstub(self) -> Any:
        return self._stub("kv")

    @property  # type: ignore[override]
    def leasestub(self) -> Any:
        return self._stub("lease")

    @property  # type: ignore[override]
    def watchstub(self) -> Any:
        return self._stub("watch")

    @property  # type: ignore[override]
    def maintenancestub(self) -> Any:
        return self._stub("maintenance")

    @property  # type: ignore[override]
    def clusterstub(self) -> Any:
        return self._stub("cluster")

    def _channel(self, target: str, host: str) -> grpc.aio.Channel:
        options: list[tuple[str, Any]] = [
            *_CHANNEL_OPTIONS, ("grpc.primary_user_agent", f"drover-coord-{self.purpose}")]
        if self._creds is not None:
            # The certificate names the host, not the address it resolved to.
            options.append(("grpc.ssl_target_name_override", host))
            return rpc.secure_channel(target, self._creds, options=options)
        return rpc.insecure_channel(target, options=options)

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        resolved = await resolve_endpoints(self.endpoints)
        eps = [Endpoint(name, self._channel(target, host)) for name, target, host in resolved]
        # DROVER_ETCD_ORDER=given keeps the endpoints in the order given (fault
        # drills pin every process to one member); by default each process
        # shuffles them so processes spread over the members.
        given = os.environ.get("DROVER_ETCD_ORDER", "") == "given"
        self.pool = EndpointPool(eps, config=self._health, label=self.purpose,
                                 shuffle=not given)
        self.pool.start()
        if any(not _is_ip(split_endpoint(ep)[0]) for ep in self.endpoints):
            self._refresher = asyncio.create_task(self._refresh_dns(),
                                                  name=f"etcd-dns-{self.purpose}")
        self._connected.set()

    async def _refresh_dns(self) -> None:
        """Re-resolve hostnames now and then: members of a headless Service
        come and go, and a restarted pod may come back on another address."""
        while True:
            await asyncio.sleep(self._dns_refresh)
            try:
                resolved = await resolve_endpoints(self.endpoints)
            except EtcdUnavailable as e:
                log.warning("etcd %s client: keeping the endpoints it has: %s", self.purpose, e)
                continue
            if self.pool is not None:
                self.pool.update([Endpoint(name, self._channel(target, host))
                                  for name, target, host in resolved
                                  if name not in self.pool.endpoints] +
                                 [self.pool.endpoints[name] for name, _, _ in resolved
                                  if name in self.pool.endpoints])

    async def close(self) -> None:
        if self._refresher is not None:
            within = self.pool.config.stop_timeout if self.pool else HealthConfig.stop_timeout
            await cancel_and_wait((self._refresher,), within=within,
                                  what=f"etcd {self.purpose} client close")
            self._refresher = None
        pool, self.pool = self.pool, None
        if pool is not None:
            await pool.close()
        self._connected.clear()


async def connect(settings: EtcdSettings, *, purpose: str,
                  health: HealthConfig | None = None) -> EtcdClient:
    """An open client for ``purpose`` ("control", "bulk", ...).

    Waits up to ``settings.dial_timeout`` for some endpoint to answer a
    health probe so a wrong endpoint fails here, not at the first call.
    """
    creds = credentials(settings.tls) if settings.tls.enabled else None
    client = EtcdClient(settings.endpoints, creds=creds, purpose=purpose, health=health)
    await client.connect()
    assert client.pool is not None
    if not await client.pool.wait_good(settings.dial_timeout):
        await client.close()
        from drover.coord.tlsprobe import diagnose

        for endpoint in settings.endpoints[:3]:
            mismatch = await asyncio.to_thread(diagnose, endpoint, settings.tls, what="etcd",
                                               flag="--etcd-ca/DROVER_ETCD_CA")
            if mismatch:
                raise EtcdUnavailable(mismatch, metadata={"endpoint": endpoint[:200]})
        raise EtcdUnavailable(
            f"etcd at {','.join(settings.endpoints)} not reachable within "
            f"{settings.dial_timeout}s ({purpose} client)"
        )
    return client
