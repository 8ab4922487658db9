"""Configuration as frozen dataclasses, from flags and ``DROVER_*`` env.

Defaults live here and nowhere else. Precedence: flag > env > default.
"""

from drover.config._settings import (
    ENV_PREFIX,
    RPC_VERSION,
    EtcdSettings,
    ServeSettings,
    TlsFiles,
    env_default,
)

__all__ = ["ENV_PREFIX", "RPC_VERSION", "EtcdSettings", "ServeSettings", "TlsFiles", "env_default"]
