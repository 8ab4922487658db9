import { test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { ClusterView } from "../src/view";
import type { Connection } from "../src/rpc";
import { job, nodes, running } from "./fixtures";

/** A connection whose second ListNodes waits for `go`: a reload's list that takes its time. */
function heldConnection() {
  let lists = 0;
  let release!: () => void;
  const go = new Promise<void>((r) => (release = r));
  let listing!: () => void;
  const secondList = new Promise<void>((r) => (listing = r));
  const streams: PassThrough[] = [];
  let current = nodes(1);
  const conn = {
    async listNodes() {
      lists += 1;
      if (lists === 2) {
        listing();
        await go;
      }
      return { nodes: current, nextPageToken: "", meta: { index: BigInt(lists * 10) } };
    },
    async listAllocations() {
      return { allocations: [], nextPageToken: "" };
    },
    subscribe() {
      const s = new PassThrough({ objectMode: true });
      streams.push(s);
      return Object.assign(s, { cancel: () => s.destroy(new Error("cancelled")) });
    },
    streamFailed() {},
  };
  return { conn: conn as unknown as Connection, release, secondList, streams,
    setNodes: (n: typeof current) => (current = n) };
}

test("a view being reloaded keeps its nodes and the placements reserved on them until the new list is in", async () => {
  const h = heldConnection();
  const logs: string[] = [];
  const view = new ClusterView(h.conn, (m) => logs.push(m));
  const run = view.run();
  await view.ready;
  const [node] = nodes(1);
  const placed = running(job({}), 1, { node: node.id })[0];
  view.reserve([placed]); // submitted, not committed yet
  const before = view.used.get(node.id);
  assert.ok(before !== undefined && before.cpu > 0);
  view.reload("a test");
  await h.secondList;
  assert.deepEqual([...view.nodes.keys()], [node.id]); // not emptied while it lists
  assert.deepEqual(view.used.get(node.id), before);
  h.setNodes(nodes(2));
  h.release();
  assert.ok(await view.waitPast(20n, 5));
  assert.equal(view.nodes.size, 2);
  assert.deepEqual(view.used.get(node.id), before); // never committed: still reserved
  view.release([placed]);
  assert.equal(view.used.get(node.id)?.cpu, 0);
  assert.ok(logs.some((m) => m.includes("a test; reloading")));
  view.stop();
  for (const s of h.streams) s.destroy();
  await run;
});
