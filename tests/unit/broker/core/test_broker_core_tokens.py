"""Delivery tokens (drover.broker.core.tokens)."""

from __future__ import annotations

import random
import uuid

from broker_builders import make_broker


def test_tokens_are_random_version_4_uuids() -> None:
    broker, _ = make_broker(seed=11)
    twin = random.Random(11)
    for _ in range(200):
        assert broker._random_uuid() == str(uuid.UUID(int=twin.getrandbits(128), version=4))
