"""Templates: one Jinja environment, autoescaped, the filters of :mod:`.present`."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2
from aiohttp import web

from drover.ui.present import filters, globals_


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("drover.ui", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(filters())
    env.globals.update(globals_())
    return env


def html(template: str, status: int = 200, **context: Any) -> web.Response:
    """``template`` rendered with ``context`` as a text/html response."""
    body = environment().get_template(template).render(**context)
    return web.Response(text=body, status=status, content_type="text/html",
                        headers={"Cache-Control": "no-store"})
