"""Configuration as frozen dataclasses, from flags and ``DROVER_*`` env.

The default of everything a flag or env variable sets lives here and
nowhere else: :class:`ServeSettings` and its parts, and every service
tunable (:data:`TUNABLES`; a service's config dataclass takes those from
:func:`tunable_default`, and each app builds its configs with
:func:`tuned_config`). A config dataclass holds defaults only for what no
flag sets. Precedence: flag > env > default.
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
from drover.config._tuning import (
    TUNABLES,
    Tunable,
    check_tunables,
    tunable_default,
    tunables,
    tuned_config,
    tuning_from_options,
)

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
    "check_tunables",
    "env_default",
    "parse_duration",
    "tunable_default",
    "tunables",
    "tuned_config",
    "tuning_from_options",
]
