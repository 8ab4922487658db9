"""A campaigning replica for process-level tests and the failover benchmark.

``python -m drover.coord._demo_candidate --endpoint H:P --prefix /x/drover
--service demo --name a`` campaigns, and while leading writes a fenced key
``<root>/v1/demo/<service>/<name>/<seq>`` (value: the term) every
``--write-interval`` seconds. It reports JSON lines on stdout:
``ready``, ``establish`` (term, won_at), ``write`` (first of each term),
``fence_lost``, ``revoke``, ``resigned``. SIGTERM resigns gracefully.
``--member`` also keeps a membership entry (replica = ``--name``).

``--unguarded-writer`` runs the writer outside the term's task group, like a
component stuck in a call while its lease expired: only the fence can stop
its next write, which is what the SIGSTOP test checks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from typing import Any

from drover.coord.connect import EtcdClient
from drover.coord.errors import FenceLost
from drover.coord.etcd_kv import EtcdKV
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.coord.leadership import Leadership, LeadershipConfig
from drover.coord.membership import Member, Registration
from drover.coord.term import Term


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


class DemoWriter:
    def __init__(self, kv: EtcdKV, keyspace: Keyspace, service: str, name: str,
                 interval: float, unguarded: bool) -> None:
        self.kv = kv
        self.base = f"{keyspace.base}demo/{service}/{name}/"
        self.interval = interval
        self.unguarded = unguarded
        self._task: asyncio.Task[None] | None = None

    async def establish(self, term: Term) -> None:
        emit("establish", term=term.revision, won_at=term.won_at_revision)
        coro = self._write(term)
        if self.unguarded:
            self._task = asyncio.create_task(coro)
        else:
            self._task = term.spawn(coro, name="demo-writer")

    async def revoke(self) -> None:
        emit("revoke")
        if self._task is not None and not self.unguarded:
            self._task.cancel()

    async def _write(self, term: Term) -> None:
        seq = 0
        while True:
            seq += 1
            key = f"{self.base}{seq:08d}".encode()
            try:
                await term.txn(self.kv, ops=[Put(key, str(term.revision).encode())])
            except FenceLost as e:
                emit("fence_lost", term=term.revision, seq=seq, detail=e.message)
                return
            if seq == 1:
                emit("write", term=term.revision, seq=seq)
            await asyncio.sleep(self.interval)


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--service", default="demo")
    p.add_argument("--name", required=True)
    p.add_argument("--ttl", type=int, default=2)
    p.add_argument("--write-interval", type=float, default=0.1)
    p.add_argument("--unguarded-writer", action="store_true")
    p.add_argument("--member", action="store_true", help="also register membership")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s {args.name} %(levelname)s %(message)s")
    client = EtcdClient(tuple(args.endpoint.split(",")), creds=None, purpose="control")
    await client.connect()
    kv = EtcdKV(client)
    keyspace = Keyspace(args.prefix)
    writer = DemoWriter(kv, keyspace, args.service, args.name, args.write_interval,
                        args.unguarded_writer)
    leadership = Leadership(kv, keyspace, args.service, f"{args.name}:0", [writer],
                            config=LeadershipConfig(ttl=args.ttl, establish_timeout=2.0,
                                                    revoke_timeout=1.0, retry_backoff=0.1))
    task = leadership.start()
    registration = None
    if args.member:
        registration = Registration(kv, keyspace, Member(
            args.service, args.name, f"{args.name}:0", 1, started_at=time.time()), ttl=args.ttl)
        registration.start()
        await registration.registered.wait()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    emit("ready", pid=os.getpid())
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    await leadership.resign()
    if registration is not None:
        await registration.close()
    emit("resigned")
    waiter.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiter
    await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
