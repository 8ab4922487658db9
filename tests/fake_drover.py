"""A gRPC server on loopback that answers a few drover methods with canned
responses, for CLI tests that need no cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager

import grpc
from google.protobuf.message import Message

#: method path -> what to answer for a request (the raw bytes)
Answers = dict[str, Callable[[bytes], Message]]


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, answers: Answers, calls: list[tuple[str, bytes]]) -> None:
        self.answers, self.calls = answers, calls

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method  # type: ignore[attr-defined]
        answer = self.answers.get(method)
        if answer is None:
            return None

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            self.calls.append((method, request))
            return answer(request).SerializeToString()

        return grpc.unary_unary_rpc_method_handler(handle)


@contextmanager
def fake_drover(answers: Answers) -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """``(address, calls)``: every call as ``(method, request bytes)``."""
    calls: list[tuple[str, bytes]] = []
    srv = grpc.server(futures.ThreadPoolExecutor(4), handlers=[_Handler(answers, calls)])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    try:
        yield f"127.0.0.1:{port}", calls
    finally:
        srv.stop(0)
