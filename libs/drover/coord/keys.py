"""The etcd key layout, in one place.

``root`` defaults to ``/drover`` (flag ``--etcd-prefix``/``DROVER_ETCD_PREFIX``),
so that several drover clusters, or several tests, can share one etcd, as
Kubernetes' ``--etcd-prefix`` allows. Every key below lives under
``<root>/v1/``::

    <root>/v1/<kind>/<namespace>/<id>        objects (state service only)
    <root>/v1/election/<service>/<lease-hex> election candidates
    <root>/v1/members/<service>/<replica>    membership, bound to a lease
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ROOT = "/drover"


@dataclass(frozen=True)
class Keyspace:
    root: str = DEFAULT_ROOT

    def __post_init__(self) -> None:
        if not self.root.startswith("/") or self.root.endswith("/"):
            raise ValueError(f"etcd prefix must start with '/' and not end with one: {self.root!r}")

    @property
    def base(self) -> str:
        return f"{self.root}/v1/"

    def kind_prefix(self, kind: str) -> str:
        return f"{self.base}{kind}/"

    def namespace_prefix(self, kind: str, namespace: str) -> str:
        return f"{self.base}{kind}/{namespace}/"

    def object(self, kind: str, namespace: str, object_id: str) -> str:
        return f"{self.base}{kind}/{namespace}/{object_id}"

    def election_prefix(self, service: str) -> str:
        return f"{self.base}election/{service}/"

    def secret(self, name: str) -> str:
        """A cluster secret (:mod:`drover.coord.secret`)."""
        return f"{self.base}secrets/{name}"

    def members_prefix(self, service: str | None = None) -> str:
        return f"{self.base}members/" + (f"{service}/" if service else "")

    def member(self, service: str, replica: str) -> str:
        return f"{self.base}members/{service}/{replica}"
