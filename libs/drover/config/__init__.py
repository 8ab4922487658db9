"""Configuration as frozen dataclasses, from flags and ``DROVER_*`` env.

Defaults live here and nowhere else. Precedence: flag > env > default.
"""

from drover.config._settings import (
    ENV_PREFIX,
    RPC_VERSION,
    EtcdSettings,
    GcSettings,
    ServeSettings,
    TlsFiles,
    env_default,
    parse_duration,
)

__all__ = ["ENV_PREFIX", "RPC_VERSION", "EtcdSettings", "GcSettings", "ServeSettings", "TlsFiles",
           "env_default", "parse_duration"]
