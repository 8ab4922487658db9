"""The end of a test session is bounded: a task a test leaves behind that
ignores its cancel fails the run, by name, instead of hanging it.

Runs a small pytest session of its own in a subprocess (the shared loop's
end is what is tested, so it cannot be this session's), bounded by
:data:`RUN_BOUND`. Without :mod:`loop_guard` the inner run never ends
(asyncio.Runner gathers the cancelled tasks with no bound; pytest-timeout
is off in it, as it would be for a hang after the last test's timeout):
the subprocess is killed at the bound and this test fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
RUN_BOUND = 60.0  # the inner run takes ~2-3 s; it is hung if not done by then

INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""

CONFTEST = """\
import loop_guard
from loop_guard import no_task_outlives_the_session  # noqa: F401

loop_guard.BOUND = 0.2
"""

LEAKY = """\
import asyncio, contextlib

async def stubborn():
    while True:  # a loop that catches its cancel and goes on (swallow: {swallow})
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)

async def polite():
    await asyncio.sleep(3600)

async def test_leaves_tasks_behind():
    asyncio.get_running_loop().create_task(stubborn(), name="leaked-stubborn")
    asyncio.get_running_loop().create_task(polite(), name="leaked-polite")
    await asyncio.sleep(0)

def test_a_sync_test_after_it():
    pass
"""


def _run(tmp_path: Path, test: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(test))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:timeout",
         "-p", "no:randomly", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_BOUND, check=False)


@pytest.mark.slow
def test_a_task_that_ignores_its_cancel_fails_the_session_instead_of_hanging_it(
        tmp_path: Path) -> None:
    run = _run(tmp_path, LEAKY.format(swallow="every cancel"))
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "2 passed" in out, out  # the tests themselves pass; the session end errs
    assert "TasksOutlivedTheSession: 1 task(s) ignored their cancel" in out, out
    assert "leaked-stubborn at " in out and "test_inner.py" in out, out
    assert "leaked-polite" not in out.split("TasksOutlivedTheSession")[1], out


@pytest.mark.slow
def test_tasks_that_end_on_their_cancel_pass_quietly(tmp_path: Path) -> None:
    run = _run(tmp_path, """\
        import asyncio

        async def test_leaves_a_polite_task():
            asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="leaked-polite")
    """)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "1 passed" in out and "TasksOutlivedTheSession" not in out, out
