"""The UI server's settings, with their defaults in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from drover.config import TlsFiles

#: Nomad's UI port.
DEFAULT_PORT = 4646
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"


@dataclass(frozen=True)
class UiConfig:
    #: host:port the web UI serves on.
    listen: str = DEFAULT_LISTEN
    #: The drover proxy (several, comma-separated: failover), as the CLI's --address.
    address: str = "127.0.0.1:7100"
    tls: TlsFiles = field(default_factory=TlsFiles)
    #: Seconds per call to drover.
    timeout: float = 10.0
    #: Rows per page of every list (the server pages; a page is never more).
    page_size: int = 25
    #: Seconds a token's capabilities are remembered before being asked again.
    capability_ttl: float = 5.0
    #: How often the event stream sends a heartbeat when nothing changes (s).
    heartbeat: float = 2.0

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "127.0.0.1", int(port)
