"""Which calls are reads (drover.rpc.reads): every drover RPC classified by hand."""

from __future__ import annotations

import pytest

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.rpc.channels import read_methods
from drover.rpc.reads import is_read, method_name

# Every drover RPC, classified by hand. A new RPC fails
# test_every_drover_rpc_is_classified until it is added here.
EXPECTED_READS = {
    "drover.state.v1.StateService": {
        "GetJob",
        "ListJobs",
        "ListJobVersions",
        "GetJobSnapshot",
        "GetEvaluation",
        "ListEvaluations",
        "CountEvaluations",
        "GetDeployment",
        "ListDeployments",
        "GetAllocation",
        "ListAllocations",
        "GetNode",
        "ListNodes",
        "GetSchedulerConfig",
        "Subscribe",
        "PlanJob",
    },
    "drover.broker.v1.EvalBrokerService": {"GetBrokerStats", "ListQueue"},
    "drover.deployments.v1.DeploymentWatcherService": {"GetWatcherStats"},
    "drover.acl.v1.AclService": {"ListPolicies", "ListTokens", "GetSelfToken"},
    "drover.proxy.v1.ClientProxyService": {"ListServers"},
}
EXPECTED_WRITES = {
    "drover.state.v1.StateService": {
        "RegisterJob",
        "DeregisterJob",
        "DeleteEvaluations",
        "UpsertEvaluations",
        "UpdateDeployment",
        "UpdateEvaluations",
        "UpsertAllocations",
        "UpdateAllocations",
        "UpdateAllocDesiredTransition",
        "UpdateNodeDrain",
        "StartJob",
        "RevertJob",
        "ScaleJob",
        "StopAllocation",
        "ReapMissedHeartbeats",
        "HeartbeatNodes",
        "UpsertNode",
        "SetSchedulerConfig",
        "SubmitPlan",
        "UpdateNodeStatus",
        "GarbageCollect",
    },
    "drover.broker.v1.EvalBrokerService": {
        "Dequeue",
        "Ack",
        "AckBatch",
        "Nack",
        "OutstandingReset",
        "CancelEvaluation",
    },
    "drover.deployments.v1.DeploymentWatcherService": {
        "PromoteDeployment",
        "PauseDeployment",
        "FailDeployment",
        "SetAllocHealth",
        "CollectGarbage",
    },
    "drover.acl.v1.AclService": {
        "Bootstrap",
        "ApplyPolicy",
        "DeletePolicy",
        "CreateToken",
        "RevokeToken",
    },
    "drover.proxy.v1.ClientProxyService": {"RebalanceServers", "WaitForConvergence"},
}
MODULES = (state_pb2, broker_pb2, deployments_pb2, acl_pb2, proxy_pb2)


def test_every_drover_rpc_is_classified() -> None:
    for module in MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            names = {m.name for m in service.methods}
            reads = EXPECTED_READS[service.full_name]
            writes = EXPECTED_WRITES[service.full_name]
            assert names == reads | writes, service.full_name
            for name in names:
                path = f"/{service.full_name}/{name}"
                assert is_read(path) is (name in reads), path


def test_the_channels_retry_the_unary_reads_of_the_services_they_know() -> None:
    known = {s for module in (state_pb2, broker_pb2, deployments_pb2, proxy_pb2)
             for s in module.DESCRIPTOR.services_by_name}
    expected = {(s, m) for s, names in EXPECTED_READS.items() for m in names
                if s.rsplit(".", 1)[-1] in known} - {("drover.state.v1.StateService", "Subscribe")}
    assert set(read_methods()) == expected


@pytest.mark.parametrize(
    ("method", "read"),
    [
        ("/grpc.health.v1.Health/Check", True),
        ("/grpc.health.v1.Health/Watch", True),
        ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", True),
        ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", True),
        ("GetJob", True),
        ("drover.state.v1.StateService/ListJobs", True),
        ("drover.state.v1.StateService/Subscribe", True),
        ("Getaway", False),  # the prefix must start a word
        ("Counter", False),
        ("Listen", False),
        ("/drover.x.v1.X/Getaway", False),
        ("Get", False),
        ("", False),
        ("Dequeue", False),
        ("/drover.broker.v1.EvalBrokerService/Dequeue", False),
        # A named read is a read of its own service only.
        ("/drover.x.v1.X/Check", False),
        ("/drover.x.v1.X/Subscribe", False),
        ("Check", False),
    ],
)
def test_is_read_by_name(method: str, read: bool) -> None:
    assert is_read(method) is read


def test_method_name() -> None:
    assert method_name("/drover.state.v1.StateService/GetJob") == "GetJob"
    assert method_name("GetJob") == "GetJob"
