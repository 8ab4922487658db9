"""`drover node ...` and `drover alloc ...`: list, status, down, ready (drain and
eligibility: :mod:`drover.cli.node_drain`)."""

from __future__ import annotations

from typing import Any

import click
import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    ListOptions,
    about,
    list_all,
    list_allocations,
    lister,
    run,
    run_list,
    state,
)
from drover.worker.resources import Vec, is_live, used


def _node_status(v: int) -> str:
    return output.enum_name(v, node_pb2.NodeStatus)


def client_status(v: int) -> str:
    return output.enum_name(v, allocation_pb2.AllocClientStatus)


def desired_status(v: int) -> str:
    return output.enum_name(v, allocation_pb2.AllocDesiredStatus)


def _health(a: allocation_pb2.Allocation) -> str:
    if not a.deployment_status.HasField("healthy"):
        return ""
    return "healthy" if a.deployment_status.healthy else "unhealthy"


def eligibility(n: node_pb2.Node) -> str:
    """Nomad's Eligibility column: ``eligible`` or ``ineligible``."""
    return output.enum_name(n.scheduling_eligibility, node_pb2.NodeSchedulingEligibility)


@click.group(name="node")
def node_group() -> None:
    """Nodes: list, status, drain, eligibility, down, ready."""


@lister(node_group, "list", 'CEL over node fields, e.g. status == "ready"')
def list_nodes(listing: ListOptions, opts: ClientOptions) -> None:
    """List nodes with their capacity and what their allocations reserve."""

    async def body(ch: grpc.aio.Channel) -> tuple[list[Any], list[Any]]:
        stub = state(ch)

        def request(token: str) -> state_pb2.ListNodesRequest:
            req = listing.request(token)
            req.pop("namespace")
            return state_pb2.ListNodesRequest(**req)

        nodes = await list_all(stub.ListNodes, request, "nodes", per_call=opts.timeout,
                               limit=listing.limit)
        allocs = await list_allocations(ch, 'desired_status == "run"', opts.timeout)
        return nodes, allocs

    nodes, allocs = run(opts, body)
    if opts.json:
        output.print_json(nodes)
        return
    # Live (non-terminal) allocations only: a finished batch allocation is
    # still desired "run" but neither runs nor holds resources.
    by_node: dict[str, list[Any]] = {}
    for a in allocs:
        if is_live(a):
            by_node.setdefault(a.node_id, []).append(a)
    rows = []
    for n in sorted(nodes, key=lambda n: n.id):
        u = used(by_node.get(n.id, []))
        rows.append([n.id, n.datacenter, eligibility(n), n.drain, _node_status(n.status),
                     f"{u.cpu}/{n.resources.cpu}", f"{u.memory_mb}/{n.resources.memory_mb}",
                     len(by_node.get(n.id, []))])
    output.print_table(None, ["ID", "DC", "Eligibility", "Drain", "Status", "CPU MHz", "Memory MB",
                              "Allocs"], rows)


@about(node_group, "status", "node_id", namespaced=False)
def node_status(node_id: str, opts: ClientOptions) -> None:
    """Show one node and its allocations."""

    async def body(ch: grpc.aio.Channel) -> tuple[Any, list[Any]]:
        stub = state(ch)
        full = await prefix.resolve(ch, "node", None, node_id, opts.timeout)
        node = (await stub.GetNode(state_pb2.GetNodeRequest(id=full),
                                   timeout=opts.timeout)).node
        allocs = await list_allocations(ch, f'node_id == "{node.id}"', opts.timeout)
        return node, allocs

    node, allocs = run(opts, body)
    if opts.json:
        output.print_json({"node": output.to_dict(node), "allocations": [a.id for a in allocs]})
        return
    u: Vec = used(allocs)
    output.print_detail(opts, node, [
        ("ID", node.id), ("Name", node.name or node.id), ("Class", node.node_class),
        ("DC", node.datacenter), ("Drain", node.drain), ("Eligibility", eligibility(node)),
        ("Status", _node_status(node.status)),
        ("CPU", f"{u.cpu}/{node.resources.cpu} MHz"),
        ("Memory", f"{u.memory_mb}/{node.resources.memory_mb} MB")])
    allocs.sort(key=lambda a: -a.create_index)
    output.print_table("Allocations", ["ID", "Job ID", "Version", "Task Group", "Desired", "Status",
                                       "Health"], (
        [a.id, a.job_id, a.job_version, a.task_group, desired_status(a.desired_status),
         client_status(a.client_status), _health(a)] for a in allocs))


def _set_status(node_id: str, opts: Any, verb: str, **fields: Any) -> None:
    resp = prefix.call(opts, "node", None, node_id, lambda ch, full: state(
        ch).UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(id=full, **fields),
                             timeout=opts.timeout))
    if opts.json:
        output.print_json(resp)
        return
    click.echo(f"node {node_id} {verb}; {resp.lost} allocations lost, "
               f"{len(resp.eval_ids)} evaluations, {resp.unblocked} unblocked")


@about(node_group, "down", "node_id", namespaced=False)
def down(node_id: str, opts: ClientOptions) -> None:
    """Mark a node down: its allocations are lost and replaced elsewhere."""
    _set_status(node_id, opts, "down",
                status=node_pb2.NODE_STATUS_DOWN)


@about(node_group, "ready", "node_id", namespaced=False)
def ready(node_id: str, opts: ClientOptions) -> None:
    """Mark a node ready again (unblocks blocked evaluations)."""
    _set_status(node_id, opts, "ready",
                status=node_pb2.NODE_STATUS_READY)


@click.group(name="alloc")
def alloc_group() -> None:
    """Allocations: list, status, stop."""


@lister(alloc_group, "list", 'CEL over allocation fields, e.g. job_id == "web"',
        newest_first=True)
@click.option("--job", default="", help="only this job's allocations")
def list_allocs(listing: ListOptions, job: str, opts: ClientOptions) -> None:
    """List allocations, newest first (as Nomad's)."""
    if job:
        listing = listing.narrowed(f'job_id == "{job}"')
    allocs = run_list(opts, listing, state, "ListAllocations",
                      state_pb2.ListAllocationsRequest, "allocations")
    # The Canary column only when one is listed: it would take the width a
    # name needs at 80 columns to say "False" on every row.
    canaries = any(a.deployment_status.canary for a in allocs)
    columns = ["ID", "Name", "Node", "Version", "Desired", "Client", "Health"]
    output.print_list(opts, allocs, [*columns, "Canary"] if canaries else columns, lambda a: [
        a.id, a.name, a.node_id, a.job_version, desired_status(a.desired_status),
        client_status(a.client_status), _health(a),
        *(["yes" if a.deployment_status.canary else ""] if canaries else [])])


@about(alloc_group, "status", "alloc_id")
def alloc_status(alloc_id: str, namespace: str, opts: ClientOptions) -> None:
    """Show one allocation."""
    a = prefix.call(opts, "allocation", namespace, alloc_id, lambda ch, full: state(
        ch).GetAllocation(state_pb2.GetAllocationRequest(namespace=namespace, id=full),
                          timeout=opts.timeout)).allocation
    output.print_detail(opts, a, [
        ("ID", a.id), ("Name", a.name), ("Job ID", a.job_id), ("Job Version", a.job_version),
        ("Node ID", a.node_id), ("Deployment ID", a.deployment_id),
        ("Desired", f"{desired_status(a.desired_status)} {a.desired_description}"),
        ("Client", f"{client_status(a.client_status)} {a.client_description}"),
        ("Health", _health(a)), ("Canary", a.deployment_status.canary),
        ("Resources", f"cpu {a.resources.cpu} MHz, memory {a.resources.memory_mb} MB"),
        ("Previous", a.previous_allocation), ("Created", output.when(a.create_time)),
        ("Modified", output.when(a.modify_time))])


@about(alloc_group, "stop", "alloc_id")
def alloc_stop(alloc_id: str, namespace: str, opts: ClientOptions) -> None:
    """Stop one allocation; the scheduler places a replacement."""
    resp = prefix.call(opts, "allocation", namespace, alloc_id, lambda ch, full: state(
        ch).StopAllocation(state_pb2.StopAllocationRequest(namespace=namespace, id=full),
                           timeout=opts.timeout))
    if opts.json:
        output.print_json(resp)
        return
    click.echo(f"allocation {alloc_id} stopped; evaluation {resp.eval_id}")
