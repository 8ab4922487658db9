import { test } from "node:test";
import assert from "node:assert/strict";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Metadata, status } from "@grpc/grpc-js";
import { Attempts } from "../src/attempts";
import { planObjects, refusedCap } from "../src/planSize";
import { remoteStatus } from "../src/status";

function statusBytes(reason: string, metadata: Record<string, string>): Buffer {
  const info = new BinaryWriter().uint32(10).string(reason).uint32(18).string("drover");
  for (const [k, v] of Object.entries(metadata)) {
    info.uint32(26).fork().uint32(10).string(k).uint32(18).string(v).join();
  }
  const any = new BinaryWriter().uint32(10).string("type.googleapis.com/google.rpc.ErrorInfo")
    .uint32(18).bytes(info.finish());
  return Buffer.from(new BinaryWriter().uint32(8).int32(3).uint32(18).string("too big")
    .uint32(26).bytes(any.finish()).finish());
}

test("a refusal's ErrorInfo reason and metadata are read from the status details", () => {
  const md = new Metadata();
  md.set("grpc-status-details-bin", statusBytes("PLAN_TOO_LARGE", { max_objects: "100" }));
  md.set("drover-leader", "10.0.0.1:7101");
  const s = remoteStatus({ code: status.INVALID_ARGUMENT, details: "too big", metadata: md });
  assert.equal(s.code, "INVALID_ARGUMENT");
  assert.equal(s.reason, "PLAN_TOO_LARGE");
  assert.deepEqual(s.metadata, { max_objects: "100" });
  assert.equal(s.leader, "10.0.0.1:7101");
  assert.equal(refusedCap(s.code, s.metadata), 98);
  assert.equal(refusedCap("FAILED_PRECONDITION", s.metadata), null);
  assert.equal(refusedCap("INVALID_ARGUMENT", {}), null);
});

test("a plan's size follows etcd's --max-txn-ops", () => {
  assert.equal(planObjects(128), 125);
  assert.equal(planObjects(1024), 1021);
});

test("partial commits without progress run out by Nomad's limit; progress resets them", () => {
  const a = new Attempts(2);
  assert.ok(a.after(false));
  assert.ok(a.after(true));
  assert.ok(a.after(false));
  assert.ok(!a.after(false));
});
