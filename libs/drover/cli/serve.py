"""`drover serve <service>`: run one drover service in the foreground.

Every flag can also be given as ``DROVER_<FLAG>`` in the environment (flag >
env > default), which is how the container image and Kubernetes manifests
configure it. The services' tunables (``--broker-nack-timeout``, ...) come
from one table, :data:`drover.config.TUNABLES`; times take ``90s``/``5m``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from drover import tasks
from drover.config import (
    ACL_DOWN_POLICIES,
    TUNABLES,
    AclSettings,
    EtcdSettings,
    GcSettings,
    ServeSettings,
    TlsFiles,
    Tunable,
    parse_duration,
    tuning_from_options,
)
from drover.errors import DroverError
from drover.rpc.app import load_app_factory, service_names
from drover.rpc.server import DroverServer, run_until_signal
from drover.telemetry import TelemetryConfigError, setup


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


class Duration(click.ParamType):
    """Seconds, or a duration such as ``90s``, ``5m``, ``1h30m``."""

    name = "duration"

    def __init__(self, minimum: float = 0.0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            try:
                seconds = parse_duration(str(value))
            except ValueError as e:
                self.fail(str(e), param, ctx)
        if seconds < self.minimum:
            self.fail(f"must be at least {self.minimum:g}s, not {seconds:g}s", param, ctx)
        return seconds


def _default_text(t: Tunable) -> str:
    return f"{t.default:g}{t.unit}" if t.unit else f"{t.default:g}"


def tunable_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """One option per service tunable (drover.config.TUNABLES), each with its
    DROVER_* twin shown in --help; unset keeps the service's default."""
    for t in reversed(TUNABLES):
        kind: click.ParamType = (
            Duration(t.minimum) if t.unit == "s"
            else click.FloatRange(min=t.minimum) if t.kind is float
            else click.IntRange(min=int(t.minimum)))
        f = click.option(
            t.flag, t.param, envvar=t.env, show_envvar=True, default=None, type=kind,
            help=f"{t.service}: {t.help} [default: {_default_text(t)}]",
        )(f)
    return f


@click.command()
@click.argument("service", type=click.Choice(["state", "broker", "deployments", "proxy"]))
@click.option("--etcd", envvar="DROVER_ETCD", default="127.0.0.1:2379", show_default=True,
              help="etcd endpoints, comma separated host:port")
@click.option("--etcd-prefix", envvar="DROVER_ETCD_PREFIX", default="/drover", show_default=True,
              help="root of drover's keys in etcd")
@click.option("--etcd-ca", envvar="DROVER_ETCD_CA", default="", help="CA bundle for etcd TLS")
@click.option("--etcd-cert", envvar="DROVER_ETCD_CERT", default="", help="client cert for etcd")
@click.option("--etcd-key", envvar="DROVER_ETCD_KEY", default="", help="client key for etcd")
@click.option("--session-ttl", envvar="DROVER_SESSION_TTL", default=10, show_default=True,
              type=click.IntRange(min=2), help="lease TTL in seconds (leadership, membership)")
@click.option("--listen", envvar="DROVER_LISTEN", default="127.0.0.1:0", show_default=True,
              help="gRPC listen address host:port")
@click.option("--advertise", envvar="DROVER_ADVERTISE", default="",
              help="address other processes dial (default: the listen address)")
@click.option("--replica", envvar="DROVER_REPLICA", default="",
              help="replica name (default: hostname-random)")
@click.option("--metrics-listen", envvar="DROVER_METRICS_LISTEN", default="",
              help="Prometheus /metrics on host:port")
@click.option("--health-listen", envvar="DROVER_HEALTH_LISTEN", default="",
              help="extra plaintext health-only port (Kubernetes probes with TLS on)")
@click.option("--tls-cert", envvar="DROVER_TLS_CERT", default="", help="server certificate")
@click.option("--tls-key", envvar="DROVER_TLS_KEY", default="", help="server key")
@click.option("--tls-ca", envvar="DROVER_TLS_CA", default="", help="CA for client certs (mTLS)")
@click.option("--state-address", envvar="DROVER_STATE_ADDRESS", default="",
              help="state service address(es), comma separated (default: from membership)")
@click.option("--backup-servers", envvar="DROVER_BACKUP_SERVERS", default="",
              help="proxy: static backup servers as service=host:port, comma separated "
                   "(e.g. state=10.0.0.5:8080,broker=10.0.0.6:8080)")
@click.option("--hold-timeout", envvar="DROVER_HOLD_TIMEOUT", default=3.0, show_default=True,
              type=click.FloatRange(min=0.05),
              help="proxy: seconds a forwarded call waits on a server that shows no life")
@click.option("--shutdown-grace", envvar="DROVER_SHUTDOWN_GRACE", default=5.0, show_default=True,
              type=click.FloatRange(min=0), help="seconds in-flight calls get on shutdown")
@click.option("--stop-timeout", envvar="DROVER_STOP_TIMEOUT", default=5.0, show_default=True,
              type=click.FloatRange(min=0.01),
              help="seconds a stop waits for the background tasks it cancelled (one still "
                   "running is logged by name and left: the shutdown goes on)")
@click.option("--gc-interval", envvar="DROVER_GC_INTERVAL", default="5m", show_default=True,
              help="deployments: how often the leader runs a garbage collection pass")
@click.option("--gc-eval-threshold", envvar="DROVER_GC_EVAL_THRESHOLD", default="1h",
              show_default=True, help="deployments: age before terminal evaluations go")
@click.option("--gc-deployment-threshold", envvar="DROVER_GC_DEPLOYMENT_THRESHOLD",
              default="1h", show_default=True,
              help="deployments: age before terminal deployments go")
@click.option("--gc-job-threshold", envvar="DROVER_GC_JOB_THRESHOLD", default="4h",
              show_default=True, help="deployments: age before dead jobs go")
@click.option("--gc-node-threshold", envvar="DROVER_GC_NODE_THRESHOLD", default="24h",
              show_default=True, help="deployments: age before down nodes go")
@click.option("--acl/--no-acl", envvar="DROVER_ACL", default=False,
              help="enforce access control: tokens and policies on every RPC")
@click.option("--acl-max-stale", envvar="DROVER_ACL_MAX_STALE", show_envvar=True, default=None,
              type=Duration(0.001),
              help="with --acl: how long the ACL view (tokens, policies) may go without being "
                   "proven current with etcd before the down policy applies "
                   f"[default: {AclSettings.max_stale:g}s]")
@click.option("--acl-down-policy", envvar="DROVER_ACL_DOWN_POLICY", show_envvar=True,
              default=None, type=click.Choice(ACL_DOWN_POLICIES),
              help="with --acl, past --acl-max-stale: 'deny' refuses every call that needs a "
                   "capability (UNAVAILABLE, ACL_DATA_STALE) until etcd is reachable again; "
                   "'extend-cache' keeps judging with the cached view, so a token revoked "
                   f"meanwhile keeps working [default: {AclSettings.down_policy}]")
@click.option("--log-level", envvar="DROVER_LOG_LEVEL", default="INFO", show_default=True)
@click.option("--log-json/--no-log-json", envvar="DROVER_LOG_JSON", default=False)
@tunable_options
def serve(service: str, **opts: object) -> None:
    """Run SERVICE (state, broker, deployments or proxy) until SIGTERM."""
    try:
        settings = settings_from_options(service, opts)
    except ValueError as e:
        raise click.BadParameter(str(e)) from e
    try:
        setup(service=service, log_level=settings.log_level, log_json=settings.log_json,
              metrics_listen=settings.metrics_listen)
    except TelemetryConfigError as e:
        raise click.ClickException(str(e)) from None
    factory = load_app_factory(service)
    try:
        app = factory(settings)
    except ValueError as e:  # a tunable the service's config refuses
        raise click.ClickException(f"{service}: {e}") from None
    except DroverError as e:  # e.g. a malformed --backup-servers entry
        raise click.ClickException(f"{service}: {e.message} ({e.reason})") from None
    try:
        # (drover.tasks.run: asyncio.run with a bounded end, see there)
        tasks.run(run_until_signal(DroverServer(settings, app, membership=True)),
                  stop_timeout=settings.stop_timeout, what=f"{service} exit")
    except DroverError as e:  # e.g. etcd unreachable or a TLS mismatch: one line, no traceback
        raise click.ClickException(f"{service}: {e.message} ({e.reason})") from None


def settings_from_options(service: str, opts: dict[str, object]) -> ServeSettings:
    def s(name: str) -> str:
        return str(opts.get(name) or "")

    etcd = EtcdSettings(
        endpoints=EtcdSettings.parse_endpoints(s("etcd")),
        prefix=s("etcd_prefix") or "/drover",
        tls=TlsFiles(ca=s("etcd_ca"), cert=s("etcd_cert"), key=s("etcd_key")),
        session_ttl=int(opts.get("session_ttl") or 10),  # type: ignore[call-overload]
    )
    kwargs: dict[str, object] = {}
    acl: dict[str, object] = {}  # unset: AclSettings' own defaults
    for name in ("max_stale", "down_policy"):
        if opts.get(f"acl_{name}") is not None:
            acl[name] = opts[f"acl_{name}"]
    if s("replica"):
        kwargs["replica"] = s("replica")
    return ServeSettings(
        service=service,
        listen=s("listen") or "127.0.0.1:0",
        advertise=s("advertise"),
        etcd=etcd,
        metrics_listen=s("metrics_listen"),
        health_listen=s("health_listen"),
        tls=TlsFiles(ca=s("tls_ca"), cert=s("tls_cert"), key=s("tls_key")),
        shutdown_grace=float(opts.get("shutdown_grace") or 5.0),  # type: ignore[arg-type]
        stop_timeout=float(opts.get("stop_timeout") or 5.0),  # type: ignore[arg-type]
        log_level=s("log_level") or "INFO",
        log_json=bool(opts.get("log_json")),
        state_addresses=_split(s("state_address")),
        backup_servers=_split(s("backup_servers")),
        hold_timeout=float(opts.get("hold_timeout") or 3.0),  # type: ignore[arg-type]
        gc=GcSettings(
            interval=parse_duration(s("gc_interval") or "5m"),
            eval_threshold=parse_duration(s("gc_eval_threshold") or "1h"),
            deployment_threshold=parse_duration(s("gc_deployment_threshold") or "1h"),
            job_threshold=parse_duration(s("gc_job_threshold") or "4h"),
            node_threshold=parse_duration(s("gc_node_threshold") or "24h"),
        ),
        acl=bool(opts.get("acl")),
        tuning=tuning_from_options(opts),
        acl_settings=AclSettings(**acl),  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


__all__ = ["serve", "service_names", "settings_from_options"]
