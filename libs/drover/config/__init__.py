"""Configuration as frozen dataclasses, from flags and ``DROVER_*`` env.

Defaults live here and nowhere else. Precedence: flag > env > default.
"""

from drover.config._settings import (
    ACL_DOWN_POLICIES,
    ENV_PREFIX,
    RPC_VERSION,
    AclSettings,
    EtcdSettings,
    GcSettings,
    ServeSettings,
    TlsFiles,
    env_default,
    parse_duration,
)
from drover.config._tuning import TUNABLES, Tunable, tunables, tuning_from_options

__all__ = [
    "ACL_DOWN_POLICIES",
    "ENV_PREFIX",
    "RPC_VERSION",
    "TUNABLES",
    "AclSettings",
    "EtcdSettings",
    "GcSettings",
    "ServeSettings",
    "TlsFiles",
    "Tunable",
    "env_default",
    "parse_duration",
    "tunables",
    "tuning_from_options",
]
