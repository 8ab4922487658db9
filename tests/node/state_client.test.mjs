// A drover client in another language: Node.js with @grpc/grpc-js, loading the
// repo's protos. Registers a job, pages through its evaluations, and writes
// what it saw as JSON so the Python test can compare with its own view. Then
// acts as a node: registers, keeps the secret its registration returns, and
// heartbeats with it (metadata drover-node-secret); another secret is refused.
// Needs DROVER_STATE_ADDR (host:port); DROVER_NODE_OUT (a file path) is optional.
// By hand: `make run`, then `DROVER_STATE_ADDR=127.0.0.1:7101 node --test tests/node`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../protos");
const addr = process.env.DROVER_STATE_ADDR;
const out = process.env.DROVER_NODE_OUT;
const run = process.env.DROVER_NODE_RUN ?? String(Date.now());

function client() {
  const def = protoLoader.loadSync("drover/state/v1/state.proto", {
    includeDirs: [root], keepCase: true, longs: String, enums: String, defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def);
  return new pkg.drover.state.v1.StateService(addr, grpc.credentials.createInsecure());
}

function call(c, method, req, metadata = new grpc.Metadata()) {
  return new Promise((resolve, reject) => {
    c[method](req, metadata, { deadline: Date.now() + 10_000 },
      (err, resp) => (err ? reject(err) : resolve(resp)));
  });
}

function nodeSecret(secret) {
  const md = new grpc.Metadata();
  md.set("drover-node-secret", secret);
  return md;
}

test("register jobs and page through their evaluations", async () => {
  // Never skip quietly: without an address this is a failure that says what to do.
  assert.ok(addr, "set DROVER_STATE_ADDR=host:port of a running state service " +
    "(`make run` serves one on 127.0.0.1:7101)");
  const c = client();
  const ids = [];
  for (let i = 0; i < 5; i++) {
    const id = `node-${run}-${i}`;
    const resp = await call(c, "RegisterJob", {
      job: { id, namespace: "default", type: "JOB_TYPE_BATCH", priority: 30 + i,
             datacenters: ["dc1"], task_groups: [{ name: "g", count: 1 }] },
    });
    assert.ok(resp.eval_id.length > 0, "RegisterJob returns an evaluation id");
    ids.push(resp.eval_id);
  }
  const filter = `job_id.startsWith("node-${run}-")`;
  const seen = [];
  let token = "";
  let pages = 0;
  do {
    const page = await call(c, "ListEvaluations", {
      namespace: "*", filter, page_size: 2, page_token: token, order_by: "create_index",
    });
    pages += 1;
    for (const ev of page.evaluations) seen.push({ id: ev.id, job_id: ev.job_id,
      status: ev.status, priority: ev.priority, create_index: ev.create_index });
    token = page.next_page_token;
  } while (token);
  assert.equal(seen.length, 5);
  assert.ok(pages >= 3, `5 evaluations in pages of 2 take 3 pages, got ${pages}`);
  assert.deepEqual(new Set(seen.map((e) => e.id)), new Set(ids));
  const count = await call(c, "CountEvaluations", { namespace: "*", filter });
  assert.equal(count.count, "5");
  // A bad filter is refused with INVALID_ARGUMENT, not an empty page.
  await assert.rejects(call(c, "ListEvaluations", { filter: "no_such_field == 1" }),
    (err) => err.code === grpc.status.INVALID_ARGUMENT);
  if (out) writeFileSync(out, JSON.stringify(seen));
  c.close();
});

test("a node registers, keeps its secret and heartbeats with it", async () => {
  assert.ok(addr, "set DROVER_STATE_ADDR=host:port of a running state service");
  const c = client();
  const secrets = {};
  for (const id of [`node-${run}-a`, `node-${run}-b`]) {
    const reg = await call(c, "UpsertNode", { node: { id, status: "NODE_STATUS_READY" } });
    assert.ok(reg.secret_id.length > 0, "the first registration returns the node's secret");
    secrets[id] = reg.secret_id;
  }
  const a = `node-${run}-a`;
  await call(c, "UpdateNodeStatus", { id: a, heartbeat: true }, nodeSecret(secrets[a]));
  // Another node's secret does not speak for this one.
  await assert.rejects(
    call(c, "UpdateNodeStatus", { id: a, heartbeat: true }, nodeSecret(secrets[`node-${run}-b`])),
    (err) => err.code === grpc.status.PERMISSION_DENIED);
  // Re-registering with its own secret: accepted, and no secret is returned again.
  const again = await call(c, "UpsertNode", { node: { id: a, status: "NODE_STATUS_READY" } },
    nodeSecret(secrets[a]));
  assert.equal(again.secret_id, "");
  c.close();
});
