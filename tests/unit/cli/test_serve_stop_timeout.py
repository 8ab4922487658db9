"""``--stop-timeout`` / ``DROVER_STOP_TIMEOUT``: the bound of every wait for
a cancelled background task in ``drover serve`` reaches the settings and
the state cache's config (:mod:`drover.tasks`)."""

from __future__ import annotations

import click
import pytest

from drover.cli.serve import serve, settings_from_options
from drover.config import ServeSettings
from drover.state.app import state_config


def _settings(args: list[str]) -> ServeSettings:
    ctx = serve.make_context("serve", list(args))
    return settings_from_options(args[0], dict(ctx.params))


def test_the_flag_reaches_the_settings_and_the_state_cache() -> None:
    settings = _settings(["state", "--stop-timeout", "2.5"])
    assert settings.stop_timeout == 2.5
    assert state_config(settings).cache.stop_timeout == 2.5


def test_the_env_twin_and_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _settings(["proxy"]).stop_timeout == ServeSettings(service="x").stop_timeout == 5.0
    monkeypatch.setenv("DROVER_STOP_TIMEOUT", "7")
    assert _settings(["broker"]).stop_timeout == 7.0


def test_a_stop_timeout_of_zero_is_refused() -> None:
    with pytest.raises(click.BadParameter, match=r"not in the range x>=0\.01"):
        _settings(["state", "--stop-timeout", "0"])
