"""The HTTP handlers: page shells, their live fragments, actions, the stream.

A page is a shell (no data, so the browser loads it without a token) whose
``#content`` htmx fetches from ``/ui/f/<page>`` with the token from the
browser's session storage, and fetches again whenever the event stream says
that what it shows changed. Every call to drover is made with the request's
token (:func:`drover.ui.backend.as_user`, set by :func:`with_token`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import grpc
from aiohttp import web

from drover.acl import Unauthenticated, parse_bearer
from drover.ui import evals_page, job_page, jobs_page, nodes_page
from drover.ui.actions import ACTIONS, BadForm
from drover.ui.backend import Backend, as_user
from drover.ui.capabilities import CapabilityCache
from drover.ui.config import UiConfig
from drover.ui.errors import failure
from drover.ui.events import stream
from drover.ui.render import html

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Per page: its title, nav key, and the event topics that change it.
PAGES = {
    "jobs": ("Jobs", "Job"),
    "job": ("Job", "Job,Deployment,Allocation"),
    "evaluations": ("Evaluations", "Evaluation"),
    "nodes": ("Nodes", "Node,Allocation"),
}


@web.middleware
async def with_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Calls made for this request carry its ``Authorization: Bearer`` token."""
    header = request.headers.get("Authorization", "")
    try:
        token = parse_bearer(header) if header else ""
    except Unauthenticated as e:
        raise web.HTTPUnauthorized(text=str(e)) from None
    if request.method == "POST" and request.headers.get("HX-Request") != "true":
        # A form posted by another site cannot set this header (CORS): no
        # cross-site request reaches an action.
        raise web.HTTPForbidden(text="actions are sent by the UI's own page (HX-Request)")
    with as_user(token):
        return await handler(request)


class Ui:
    def __init__(self, cfg: UiConfig, backend: Backend) -> None:
        self.cfg = cfg
        self.backend = backend
        self.caps = CapabilityCache(cfg.capability_ttl)

    # -- shells ---------------------------------------------------------------

    def _shell(self, page: str, fragment: str, request: web.Request, **scope: str) -> web.Response:
        title, topics = PAGES[page]
        query = urlencode(dict(request.query))
        return html("shell.html", page=page, title=title, topics=topics,
                    fragment=fragment + (f"?{query}" if query else ""), scope=scope)

    async def jobs_shell(self, request: web.Request) -> web.Response:
        return self._shell("jobs", "/ui/f/jobs", request,
                           namespace=request.query.get("namespace", "default"))

    async def job_shell(self, request: web.Request) -> web.Response:
        ns, job = request.match_info["namespace"], request.match_info["job"]
        return self._shell("job", f"/ui/f/jobs/{ns}/{job}", request, namespace=ns, job=job)

    async def evals_shell(self, request: web.Request) -> web.Response:
        return self._shell("evaluations", "/ui/f/evaluations", request,
                           namespace=request.query.get("namespace", "default"))

    async def nodes_shell(self, request: web.Request) -> web.Response:
        return self._shell("nodes", "/ui/f/nodes", request)

    # -- fragments ------------------------------------------------------------

    async def _fragment(self, template: str, namespace: str,
                        load: Callable[[], Awaitable[dict[str, Any]]]) -> web.Response:
        try:
            context = await load()
            caps = await self.caps.of(self.backend, namespace)
        except grpc.RpcError as err:
            status, code, line = failure(err)
            return html("error.html", status=status, code=code, message=line)
        return html(template, caps=caps, **context)

    async def jobs(self, request: web.Request) -> web.Response:
        q = request.query
        return await self._fragment("jobs.html", q.get("namespace") or "default",
                                    lambda: jobs_page.load(self.backend, q, self.cfg.page_size))

    async def job(self, request: web.Request) -> web.Response:
        ns, job = request.match_info["namespace"], request.match_info["job"]
        return await self._fragment("job.html", ns, lambda: job_page.load(
            self.backend, ns, job, request.query, self.cfg.page_size))

    async def evaluations(self, request: web.Request) -> web.Response:
        q = request.query
        return await self._fragment("evaluations.html", q.get("namespace") or "default",
                                    lambda: evals_page.load(self.backend, q, self.cfg.page_size))

    async def nodes(self, request: web.Request) -> web.Response:
        return await self._fragment("nodes.html", "default", lambda: nodes_page.load(
            self.backend, request.query, self.cfg.page_size))

    async def whoami(self, request: web.Request) -> web.Response:
        caps = await self.caps.of(self.backend, request.query.get("namespace") or "default")
        return html("whoami.html", caps=caps)

    # -- actions and the stream -----------------------------------------------

    async def action(self, request: web.Request) -> web.Response:
        name = request.match_info["action"]
        if name not in ACTIONS:
            return html("flash.html", status=404, ok=False,
                        message=f"no action {name!r}: one of {', '.join(sorted(ACTIONS))}")
        form = {k: str(v) for k, v in (await request.post()).items()}
        try:
            message = await ACTIONS[name][0](self.backend, form)
        except BadForm as e:
            return html("flash.html", status=400, ok=False, message=str(e))
        except grpc.RpcError as err:
            status, _, line = failure(err)
            return html("flash.html", status=status, ok=False, message=line)
        resp = html("flash.html", ok=True, message=message)
        resp.headers["HX-Trigger"] = "drover:refresh"
        return resp

    async def events(self, request: web.Request) -> web.StreamResponse:
        return await stream(request, self.backend.state.Subscribe, self.cfg.heartbeat)

    async def index(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/ui/jobs")

    async def healthz(self, request: web.Request) -> web.Response:
        """Liveness for the kubelet: the process serves (drover itself may
        be down: the pages say so, a restart would not help)."""
        return web.Response(text="ok\n")
