"""The buttons: one drover RPC each, Nomad's UI actions.

``POST /ui/actions/<name>`` with the form's fields. Each action is the
RPC the CLI's command sends, with the user's token; a refusal is answered
with the CLI's line and the HTTP status of its gRPC code (a token without
the capability: 403 and ``... (ACL_PERMISSION_DENIED)``), whether or not
the page offered the button.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import node_pb2
from drover.drain.strategy import DEFAULT_DEADLINE
from drover.ui.backend import Backend


class BadForm(ValueError):
    """A form field missing or malformed (HTTP 400, nothing sent)."""


def field(form: Mapping[str, str], name: str) -> str:
    value = (form.get(name) or "").strip()
    if not value:
        raise BadForm(f"{name} is required")
    return value


def number(form: Mapping[str, str], name: str) -> int:
    text = field(form, name)
    try:
        value = int(text)
    except ValueError:
        raise BadForm(f"{name} must be a whole number, not {text!r}") from None
    if value < 0:
        raise BadForm(f"{name} must be 0 or more")
    return value


Action = Callable[[Backend, Mapping[str, str]], Awaitable[str]]


def _ns(form: Mapping[str, str]) -> str:
    return (form.get("namespace") or "default").strip()


async def promote(b: Backend, f: Mapping[str, str]) -> str:
    await b.deployments.PromoteDeployment(deployments_pb2.PromoteDeploymentRequest(
        namespace=_ns(f), deployment_id=field(f, "deployment"), all=True), timeout=b.timeout)
    return "Deployment promoted"


async def fail(b: Backend, f: Mapping[str, str]) -> str:
    await b.deployments.FailDeployment(deployments_pb2.FailDeploymentRequest(
        namespace=_ns(f), deployment_id=field(f, "deployment")), timeout=b.timeout)
    return "Deployment failed"


def _pause(pause: bool) -> Action:
    async def act(b: Backend, f: Mapping[str, str]) -> str:
        await b.deployments.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
            namespace=_ns(f), deployment_id=field(f, "deployment"), pause=pause),
            timeout=b.timeout)
        return "Deployment paused" if pause else "Deployment resumed"
    return act


async def stop(b: Backend, f: Mapping[str, str]) -> str:
    resp = await b.state.DeregisterJob(state_pb2.DeregisterJobRequest(
        namespace=_ns(f), id=field(f, "job")), timeout=b.timeout)
    return f"Job stopped (evaluation {resp.eval_id[:8]})"


async def start(b: Backend, f: Mapping[str, str]) -> str:
    resp = await b.state.StartJob(state_pb2.StartJobRequest(
        namespace=_ns(f), id=field(f, "job")), timeout=b.timeout)
    return f"Job started as version {resp.version}"


async def revert(b: Backend, f: Mapping[str, str]) -> str:
    resp = await b.state.RevertJob(state_pb2.RevertJobRequest(
        namespace=_ns(f), id=field(f, "job"), version=number(f, "version")),
        timeout=b.timeout)
    return f"Job reverted to version {resp.reverted_to} (now version {resp.version})"


async def scale(b: Backend, f: Mapping[str, str]) -> str:
    count = number(f, "count")
    resp = await b.state.ScaleJob(state_pb2.ScaleJobRequest(
        namespace=_ns(f), id=field(f, "job"), group=field(f, "group"), count=count,
        message="scaled from the web UI"), timeout=b.timeout)
    return f"Group {f['group']} scaled from {resp.previous_count} to {count}"


async def drain(b: Backend, f: Mapping[str, str]) -> str:
    req = state_pb2.UpdateNodeDrainRequest(id=field(f, "node"))
    req.drain_strategy.deadline.FromNanoseconds(int(DEFAULT_DEADLINE * 1e9))
    await b.state.UpdateNodeDrain(req, timeout=b.timeout)
    return "Drain started"


async def cancel_drain(b: Backend, f: Mapping[str, str]) -> str:
    await b.state.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(
        id=field(f, "node"), mark_eligible=True), timeout=b.timeout)
    return "Drain cancelled; node eligible"


def _eligibility(eligible: bool) -> Action:
    async def act(b: Backend, f: Mapping[str, str]) -> str:
        await b.state.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
            id=field(f, "node"), scheduling_eligibility=(
                node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE if eligible
                else node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE)), timeout=b.timeout)
        return "Node eligible" if eligible else "Node ineligible"
    return act


#: name -> (action, the capability that offers it: a Capabilities field).
ACTIONS: dict[str, tuple[Action, str]] = {
    "promote": (promote, "submit_job"),
    "fail": (fail, "submit_job"),
    "pause": (_pause(True), "submit_job"),
    "resume": (_pause(False), "submit_job"),
    "stop": (stop, "submit_job"),
    "start": (start, "submit_job"),
    "revert": (revert, "submit_job"),
    "scale": (scale, "scale_job"),
    "drain": (drain, "node_write"),
    "cancel-drain": (cancel_drain, "node_write"),
    "eligible": (_eligibility(True), "node_write"),
    "ineligible": (_eligibility(False), "node_write"),
}

