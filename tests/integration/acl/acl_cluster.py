"""A whole drover cluster with ``acl=True``, in process: two state replicas,
a broker, a deployment watcher and a proxy, each a real DroverServer with
membership in the session etcd, optionally TLS everywhere."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import descriptor_pool, message_factory

from drover.acl import TABLE, bearer
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import query_pb2
from drover.config import AclSettings, EtcdSettings, ServeSettings, TlsFiles
from drover.rpc.app import load_app_factory
from drover.rpc.channels import channel
from drover.rpc.remote import error_info
from drover.rpc.server import DroverServer


@dataclass
class Cluster:
    servers: dict[str, DroverServer] = field(default_factory=dict)
    tls: TlsFiles | None = None

    def address(self, name: str) -> str:
        return self.servers[name].ctx.address  # type: ignore[union-attr]

    def channel(self, name: str) -> grpc.aio.Channel:
        return channel(self.address(name), tls=self.tls)

    async def close(self) -> None:
        for server in reversed(list(self.servers.values())):
            await server.stop(0)


def settings(service: str, endpoint: str, prefix: str, replica: str, *,
             tls: TlsFiles | None = None, etcd_tls: TlsFiles | None = None,
             **kw: Any) -> ServeSettings:
    return ServeSettings(
        service=service, replica=replica, shutdown_grace=0.0, acl=True,
        etcd=EtcdSettings(endpoints=(endpoint,), prefix=prefix, session_ttl=3,
                          tls=etcd_tls or TlsFiles()),
        tls=tls or TlsFiles(), **kw)


async def start_cluster(endpoint: str, prefix: str, *, tls: TlsFiles | None = None,
                        client_tls: TlsFiles | None = None,
                        etcd_tls: TlsFiles | None = None,
                        state_acl: AclSettings | None = None) -> Cluster:
    """``tls``: the servers' cert/key/CA (mTLS between services);
    ``client_tls``: what the test's own channels present; ``state_acl``: the
    state replicas' ACL staleness bound and down policy."""
    cluster = Cluster(tls=client_tls)
    try:
        for name in ("state-1", "state-2"):
            extra: dict[str, Any] = {"acl_settings": state_acl} if state_acl else {}
            s = settings("state", endpoint, prefix, name, tls=tls, etcd_tls=etcd_tls, **extra)
            cluster.servers[name] = await _start(s)
        state_address = cluster.address("state-1")
        for name, service in (("broker", "broker"), ("deployments", "deployments"),
                              ("proxy", "proxy")):
            s = settings(service, endpoint, prefix, name, tls=tls, etcd_tls=etcd_tls,
                         state_addresses=(state_address,))
            cluster.servers[name] = await _start(s)
    except BaseException:
        await cluster.close()
        raise
    return cluster


async def _start(s: ServeSettings) -> DroverServer:
    server = DroverServer(s, load_app_factory(s.service)(s), membership=True)
    await server.start()
    return server


def _message(full_name: str) -> Any:
    desc = descriptor_pool.Default().FindMessageTypeByName(full_name)
    return message_factory.GetMessageClass(desc)


def method_types(method: str) -> tuple[Any, Any, bool]:
    """(request class, response class, server streaming) of a table method."""
    _, service, name = method.split("/")
    svc = descriptor_pool.Default().FindServiceByName(service)
    m = svc.methods_by_name[name]
    return _message(m.input_type.full_name), _message(m.output_type.full_name), \
        m.server_streaming


READ_PREFIXES = ("Get", "List", "Count", "Subscribe", "WaitFor")


def mutations() -> list[str]:
    """Every table method that changes something (Bootstrap aside)."""
    return sorted(m for m in TABLE if not m.rsplit("/", 1)[1].startswith(READ_PREFIXES)
                  and not m.endswith("/Bootstrap"))


async def call(ch: grpc.aio.Channel, method: str, request: Any = None, *,
               secret: str = "", deadline: float = 5.0) -> tuple[grpc.StatusCode, str, Any]:
    """(code, ErrorInfo reason, response) of one call; streams read one item."""
    req_cls, resp_cls, streaming = method_types(method)
    request = request if request is not None else req_cls()
    md = bearer(secret)
    try:
        if streaming:
            stream = ch.unary_stream(method, request_serializer=req_cls.SerializeToString,
                                     response_deserializer=resp_cls.FromString)(
                request, metadata=md, timeout=deadline)
            try:
                first = await asyncio.wait_for(stream.read(), 1.0)
            except TimeoutError:
                first = None  # the stream is open: it was allowed
            stream.cancel()
            return grpc.StatusCode.OK, "", first
        resp = await ch.unary_unary(method, request_serializer=req_cls.SerializeToString,
                                    response_deserializer=resp_cls.FromString)(
            request, metadata=md, timeout=deadline)
        return grpc.StatusCode.OK, "", resp
    except grpc.aio.AioRpcError as err:
        info = error_info(err)
        return err.code(), info.reason if info else "", err.details()


def host_of(method: str) -> str:
    """Which cluster server hosts a method's service."""
    service = method.split("/")[1]
    return {"drover.state.v1.StateService": "state-1", "drover.acl.v1.AclService": "state-1",
            "drover.broker.v1.EvalBrokerService": "broker",
            "drover.deployments.v1.DeploymentWatcherService": "deployments",
            "drover.proxy.v1.ClientProxyService": "proxy"}[service]


def forwarded(method: str) -> bool:
    return host_of(method) != "proxy"


#: Method prefixes the ACL tests call.
ACL = "/drover.acl.v1.AclService/"
STATE = "/drover.state.v1.StateService/"


#: A read that needs a capability and, served stale, no consistent read:
#: what a replica whose ACL view went stale refuses (ACL_DATA_STALE).
STALE_READ = state_pb2.ListJobsRequest(query=query_pb2.QueryOptions(stale=True))


async def until_code(ch: grpc.aio.Channel, secret: str, want: grpc.StatusCode, *,
                     within: float, poll: float = 0.05) -> tuple[grpc.StatusCode, str, Any]:
    """Stale reads with ``secret`` until one answers ``want``, for at most
    ``within`` seconds; the last answer either way."""
    got: tuple[grpc.StatusCode, str, Any] = (grpc.StatusCode.UNKNOWN, "", None)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = await call(ch, STATE + "ListJobs", STALE_READ,
                         secret=secret, deadline=2.0)
        if got[0] == want:
            return got
        await asyncio.sleep(poll)
    return got
