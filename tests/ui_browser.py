"""A real browser for the web UI's tests and benchmark: Debian's chromium,
headless, driven by Playwright (the Python package; it downloads no browser:
the system one is its executable), with a fresh profile each time.

``make browser`` installs chromium where it is missing (as root).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator

from playwright.async_api import BrowserContext, Page, async_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: sessionStorage key the UI keeps the token under (static/ui.js).
TOKEN_KEY = "drover.token"


def chromium() -> str | None:
    """The system chromium, or None (then the browser tests skip, saying why)."""
    return shutil.which("chromium") or (CHROMIUM if shutil.which(CHROMIUM) else None)


@contextlib.asynccontextmanager
async def browser(width: int = 1280, height: int = 600) -> AsyncIterator[BrowserContext]:
    """A headless chromium context on a fresh user-data-dir (removed after)."""
    exe = chromium()
    assert exe is not None, "no chromium: `make browser` installs it"
    profile = tempfile.mkdtemp(prefix="drover-ui-chromium-")
    try:
        async with async_playwright() as pw:
            ctx = await pw.chromium.launch_persistent_context(
                profile, executable_path=exe, args=FLAGS, headless=True,
                viewport={"width": width, "height": height})
            try:
                yield ctx
            finally:
                await ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


async def open_page(ctx: BrowserContext, url: str, token: str) -> Page:
    """``url`` in a new tab whose session storage holds ``token`` (as if the
    user had entered it), once its first content and the live stream are up."""
    page = await ctx.new_page()
    await page.add_init_script(f"sessionStorage.setItem({TOKEN_KEY!r}, {token!r})")
    page.on("dialog", lambda d: d.accept())  # hx-confirm prompts
    await page.goto(url)
    await page.wait_for_selector("#index-marker", state="attached", timeout=20_000)
    await page.wait_for_selector("#live[data-state=live]", timeout=20_000)
    return page
