"""Forwarding: which metadata travels, and every backend method with its shape."""

from __future__ import annotations

from drover.proxy.forward import forwardable, forwarded_methods


def test_forwardable_drops_transport_headers() -> None:
    md = [(":authority", "x"), ("user-agent", "grpc"), ("grpc-timeout", "1S"),
          ("drover-fence", "k:3"), ("x-bin", b"\x00"), ("content-type", "application/grpc")]
    assert forwardable(md) == (("drover-fence", "k:3"), ("x-bin", b"\x00"))
    assert forwardable(None) == ()


def test_every_backend_method_is_forwarded_with_its_shape() -> None:
    methods = forwarded_methods()
    sub = methods["/drover.state.v1.StateService/Subscribe"]
    assert sub.backend == "state" and sub.server_streaming and not sub.client_streaming
    assert methods["/drover.broker.v1.EvalBrokerService/Dequeue"].backend == "broker"
    assert methods["/drover.deployments.v1.DeploymentWatcherService/PromoteDeployment"].backend \
        == "deployments"
    assert not any(p.startswith("/drover.proxy.") for p in methods)
