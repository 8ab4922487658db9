"""The broker's core settings (drover.broker.config): their checks and the nack delays."""

from __future__ import annotations

import pytest

from drover.broker.config import BrokerConfig


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="delivery_limit"):
        BrokerConfig(delivery_limit=0)
    with pytest.raises(ValueError, match="nack_timeout"):
        BrokerConfig(nack_timeout=0)
    assert BrokerConfig().nack_delay(1) == 1.0
    assert BrokerConfig().nack_delay(3) == 40.0
