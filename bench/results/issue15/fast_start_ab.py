"""A/B of a state replica's initial list (fast-start), main vs a branch, one etcd.

    python fast_start_ab.py seed DIR N          # an etcd data dir holding N evaluations
    python fast_start_ab.py run DIR PY_A PY_B [rounds]

``run`` starts etcd on DIR and, alternately for each interpreter (each
venv's editable install is its tree's code), runs a fresh child process that
(1) pages the raw keys with the same windows (etcd's time plus gRPC, no
decode) and (2) runs ``Cache.start()``; it prints wall seconds, the child's
CPU and etcd's CPU for each, and RSS growth per listed object.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time


def cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_pages() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])


def etcd_server(data_dir: str):  # type: ignore[no-untyped-def]
    from drover.dev.etcd import EtcdServer
    return EtcdServer(data_dir=data_dir, extra_args=("--quota-backend-bytes", str(8 * 2**30)))


async def seed(data_dir: str, n: int) -> None:
    import random

    import grpc
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from state_bench import make_eval, raw_puts  # type: ignore[import-not-found]

    from drover.coord.keys import Keyspace
    from drover.state.app import EtcdStore
    from drover.state.cache import marker_put
    from drover.state.core import codec
    etcd = etcd_server(data_dir).start()
    try:
        channel = grpc.aio.insecure_channel(etcd.endpoint)
        store = EtcdStore(channel, timeout=60)
        keys = codec.KeyCodec(Keyspace("/bench"))
        rnd = random.Random(1)
        evs = [make_eval(rnd, i) for i in range(n)]
        items = [(keys.key(codec.EVALUATIONS, e.namespace, e.id), codec.encode(e)) for e in evs]
        await raw_puts(store, items, marker_put(keys))
        await channel.close()
    finally:
        etcd.stop()


async def child(endpoint: str, etcd_pid: int, mode: str) -> None:
    import gc

    import grpc

    from drover.coord.keys import Keyspace
    from drover.coord.kv import prefix_end
    from drover.state.app import EtcdStore
    from drover.state.cache import Cache
    from drover.state.config import CacheConfig
    from drover.state.core import codec
    from drover.state.core.windows import RangeWindows
    channel = grpc.aio.insecure_channel(endpoint, options=[
        ("grpc.max_receive_message_length", 64 * 2**20)])
    store = EtcdStore(channel, timeout=60)
    await store.revision()
    out: dict[str, float] = {}
    me = os.getpid()
    if mode == "raw":
        prefix = b"/bench/v1/"
        w = RangeWindows(prefix, prefix_end(prefix), limit=5000)
        t0, c0, e0 = time.perf_counter(), cpu_of(me), cpu_of(etcd_pid)
        rev, n = 0, 0
        while not w.done:
            lo, hi = w.next()
            page = await store.range(lo, hi, limit=5000, revision=rev)
            rev = rev or page.revision
            n += len(page.kvs)
            w.observe([kv.key for kv in page.kvs], page.count, page.more)
        out.update(raw_s=time.perf_counter() - t0, raw_cpu=cpu_of(me) - c0,
                   raw_etcd_cpu=cpu_of(etcd_pid) - e0, raw_n=n, raw_requests=w.requests)
    else:
        gc.collect()
        rss0 = rss_pages()
        cache = Cache(store, codec.KeyCodec(Keyspace("/bench")), CacheConfig())
        t0, c0, e0 = time.perf_counter(), cpu_of(me), cpu_of(etcd_pid)
        await cache.start()
        out.update(list_s=time.perf_counter() - t0, list_cpu=cpu_of(me) - c0,
                   list_etcd_cpu=cpu_of(etcd_pid) - e0,
                   n=sum(len(t) for t in cache.tables.tables.values()))
        await cache.close()
        gc.collect()
        rss1 = rss_pages()
        out["rss_per_obj"] = (rss1 - rss0) * os.sysconf("SC_PAGE_SIZE") / max(1, out["n"])
    print(json.dumps(out))


def run(data_dir: str, pythons: list[str], rounds: int) -> None:
    etcd = etcd_server(data_dir).start()
    try:
        for r in range(rounds):
            for py in pythons:
                res: dict[str, float] = {"python": py, "round": r}  # type: ignore[dict-item]
                for mode in ("raw", "list"):
                    got = subprocess.run([py, __file__, "child", etcd.endpoint, str(etcd.pid),
                                          mode], capture_output=True, text=True, check=True)
                    res.update(json.loads(got.stdout.strip().splitlines()[-1]))
                with open("/proc/loadavg") as f:
                    res["load"] = float(f.read().split()[0])  # type: ignore[assignment]
                print(json.dumps(res), flush=True)
    finally:
        etcd.stop()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "seed":
        asyncio.run(seed(sys.argv[2], int(sys.argv[3])))
    elif cmd == "child":
        asyncio.run(child(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
    else:
        run(sys.argv[2], sys.argv[3:5], int(sys.argv[5]) if len(sys.argv) > 5 else 1)
