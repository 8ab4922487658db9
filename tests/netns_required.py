"""The one rule for tests that need network namespaces (root, `ip`, `nft`).

Outside CI a machine without them skips those tests and says why (a
developer's laptop, an unprivileged container). In CI (``CI=true``) they are
never skipped: `.ci/run` installs the tools and runs as root, so a missing
one there is a failure to see, not a quiet skip.
"""

from __future__ import annotations

import os

import pytest

from drover.dev import netns

_WHY = netns.available()

#: Add to a module's ``pytestmark`` with ``pytest.mark.netfault``.
needs_netns = pytest.mark.skipif(
    bool(_WHY) and os.environ.get("CI") != "true",
    reason=f"{_WHY or 'ok'} (network namespace tests; CI runs them as root)")
