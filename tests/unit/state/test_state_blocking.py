"""How long a blocking query waits (:func:`drover.state.blocking.blocking_wait`)."""

from __future__ import annotations

import pytest

from drover.errors import InvalidArgument
from drover.state.blocking import blocking_wait
from drover.state.config import BlockingConfig


def test_blocking_wait() -> None:
    cfg = BlockingConfig(default_wait=300, max_wait=600)
    assert blocking_wait(0, 0.0, cfg) == 300
    assert blocking_wait(10, 0.0, cfg) == 10
    assert blocking_wait(10_000, 0.0, cfg) == 600
    assert blocking_wait(160, 0.999, cfg) == pytest.approx(160 + 10 * 0.999)
    with pytest.raises(InvalidArgument):
        blocking_wait(-1, 0.0, cfg)
