"""The server record: one backend replica the proxy may call.

Identity is the ``address`` (``host:port``): a list holds each address once,
"the same set" means the same addresses, and health is kept per address. The
other fields are what membership advertises about the replica and may change
under the same address (a restarted replica keeps its place in the list).
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.proxy.errors import InvalidServer

#: rpc_version of a server whose version is not known (static backups from
#: config): never filtered out by the version gate.
UNKNOWN_RPC_VERSION = 0


@dataclass(frozen=True)
class Server:
    """A backend server as discovered (membership) or configured (backup)."""

    address: str
    replica: str = ""
    rpc_version: int = UNKNOWN_RPC_VERSION
    backup: bool = False

    def __post_init__(self) -> None:
        if not self.address or self.address != self.address.strip():
            raise InvalidServer(
                f"server address must be a non-empty host:port: {self.address!r}",
                metadata={"address": self.address},
            )
        if self.rpc_version < 0:
            raise InvalidServer(
                f"server {self.address} has a negative rpc version {self.rpc_version}",
                metadata={"address": self.address},
            )

    @classmethod
    def backup_at(cls, address: str) -> Server:
        """A static backup server from config (no replica, version unknown)."""
        return cls(address=address, backup=True)
