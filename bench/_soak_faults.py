"""The soak's faults (bench/soak.py draws one a minute by seed).

* ``kill9``: kill -9 of any process of the suite, etcd members included
  (the supervisor restarts it);
* ``sigstop``: SIGSTOP of any drover process, SIGCONT after 8-15 s;
* ``etcd_freeze``: the same for an etcd member;
* ``etcd_partition``: an etcd member cut from its peers and its clients;
* ``state_cut``: a state replica cut from etcd (its clients still reach it).

The two cuts are nftables rules in the soak's own network namespace (the
soak runs in one: :func:`enter_own_netns`; never the host's). Loopback
tells processes apart by port only, so a cut drops the process's
connections by their ports (those open when it starts: its listeners and
its connections, read from /proc) and its new connections by its cgroup
(the process is moved into a cgroup v2 group for the cut and back after;
``socket cgroupv2`` matches the sockets it creates meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from _soak_report import FaultRecord

from drover.dev.supervisor import Supervisor

KINDS = ("kill9", "sigstop", "etcd_freeze", "etcd_partition", "state_cut")
#: The cuts need these (root, nft, the soak's own network namespace).
CUTS = ("etcd_partition", "state_cut")
NFT_TABLE = "drover_soak"
#: Where the soak's mount namespace puts the cgroup v2 hierarchy (nft
#: resolves ``socket cgroupv2`` paths under /sys/fs/cgroup).
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Its own name (the hierarchy is the host's: a mount namespace does not scope it).
CUT_GROUP = f"drover-soak-cut-{os.getpid()}"
#: Set in the re-executed soak: it runs in its own network namespace.
NETNS_ENV = "SOAK_OWN_NETNS"
HOLD = (8.0, 15.0)


def enter_own_netns() -> bool:
    """Re-execute this program in its own network and mount namespaces
    (root and unshare needed; else run here and draw no cuts). In the
    child: loopback up, the cgroup v2 hierarchy at /sys/fs/cgroup."""
    if os.environ.get(NETNS_ENV):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        if not (CGROUP_ROOT / "cgroup.procs").exists():
            unified = CGROUP_ROOT / "unified"
            if (unified / "cgroup.procs").exists():
                subprocess.run(["mount", "--bind", str(unified), str(CGROUP_ROOT)], check=True)
            else:
                subprocess.run(["mount", "-t", "cgroup2", "none", str(CGROUP_ROOT)], check=True)
        return True
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None or shutil.which("nft") is None:
        return False
    os.execve(unshare, [unshare, "--net", "--mount", "--", sys.executable, *sys.argv],
              dict(os.environ, **{NETNS_ENV: "1"}))
    raise AssertionError("unreachable")


def processes(sup: Supervisor) -> dict[str, int]:
    """Every running process of the suite by name (etcd members ``etcd-i``)."""
    out = {name: p.pid for name, p in sup.children.items() if p.poll() is None}
    if sup.cluster is not None:
        out.update({f"etcd-{i}": m.pid for i, m in enumerate(sup.cluster.members) if m.running})
    return out


def _local_ports(pid: int) -> set[int]:
    """The local ports of every TCP socket ``pid`` holds (listeners too)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
                if m:
                    inodes.add(m.group(1))
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as f:
            for line in list(f)[1:]:
                cols = line.split()
                if cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def _set(ports: Iterable[int]) -> str:
    return "{ " + ", ".join(str(p) for p in sorted(ports)) + " }"


class Faults:
    def __init__(self, sup: Supervisor, rng: random.Random, own_netns: bool) -> None:
        self.sup, self.rng = sup, rng
        self.cuts = own_netns
        self.stopped: list[int] = []
        self.in_group: list[int] = []

    def kinds(self) -> tuple[str, ...]:
        return KINDS if self.cuts else tuple(k for k in KINDS if k not in CUTS)

    async def inject(self, t0: float, kind: str | None = None) -> FaultRecord:
        kind = kind or self.rng.choice(self.kinds())
        start = time.monotonic() - t0
        hold = self.rng.uniform(*HOLD)
        procs = processes(self.sup)
        if kind == "kill9":
            target = self.rng.choice(sorted(procs))
            os.kill(procs[target], signal.SIGKILL)
            await asyncio.sleep(hold)
        elif kind in ("sigstop", "etcd_freeze"):
            names = sorted(n for n in procs if n.startswith("etcd-") == (kind == "etcd_freeze"))
            target = self.rng.choice(names)
            await self._stopped(procs[target], hold)
        else:
            members = self.sup.cluster.members if self.sup.cluster is not None else []
            if kind == "etcd_partition":  # one member cut from its peers and clients
                target = self.rng.choice(sorted(n for n in procs if n.startswith("etcd-")))
                remote: set[int] | None = None
            else:  # state_cut: one state replica cut from every etcd member
                target = self.rng.choice(sorted(n for n in procs if n.startswith("state-")))
                remote = {m.client_port for m in members}
            self._cut(procs[target], remote)
            try:
                await asyncio.sleep(hold)
            finally:
                self.heal()
        return FaultRecord(kind, target, start, time.monotonic() - t0)

    async def _stopped(self, pid: int, hold: float) -> None:
        os.kill(pid, signal.SIGSTOP)
        self.stopped.append(pid)
        try:
            await asyncio.sleep(hold)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
            self.stopped.remove(pid)

    def _cut(self, pid: int, remote: set[int] | None) -> None:
        """Drop ``pid``'s TCP traffic (to ``remote`` ports only, if given)."""
        group = CGROUP_ROOT / CUT_GROUP
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(pid))
        self.in_group.append(pid)
        to = f"tcp dport {_set(remote)} " if remote else ""
        back = f"tcp sport {_set(remote)} " if remote else ""
        rules = [f'socket cgroupv2 level 1 "{CUT_GROUP}" {to}drop']
        local = _local_ports(pid) - (remote or set())
        if local:
            rules += [f"oif lo {to}tcp sport {_set(local)} drop",
                      f"oif lo {back}tcp dport {_set(local)} drop"]
        body = "".join(f"    {r}\n" for r in rules)
        subprocess.run(["nft", "-f", "-"], check=True, input=(
            f"table inet {NFT_TABLE} {{\n  chain out {{\n"
            f"    type filter hook output priority 0;\n{body}  }}\n}}\n").encode())

    def heal(self) -> None:
        """Every fault undone: rules deleted, processes continued and back in
        the root cgroup."""
        if self.cuts:
            subprocess.run(["nft", "delete", "table", "inet", NFT_TABLE],
                           capture_output=True, check=False)
        for pid in list(self.in_group):
            with contextlib.suppress(OSError):
                (CGROUP_ROOT / "cgroup.procs").write_text(str(pid))
            self.in_group.remove(pid)
        for pid in list(self.stopped):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        self.heal()
        with contextlib.suppress(OSError):
            (CGROUP_ROOT / CUT_GROUP).rmdir()
