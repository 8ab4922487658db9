import { test } from "node:test";
import assert from "node:assert/strict";
import { parse } from "../src/main";

test("the worker takes `drover worker`'s flags, and the environment's address and token", () => {
  const got = parse(["--scheduler", "batch", "--scheduler", "system", "--num-schedulers", "3", "--max-txn-ops", "1024",
    "--batch", "4", "--seed", "7"], { DROVER_ADDR: "a:1,b:2", DROVER_TOKEN: "secret" });
  assert.deepEqual(got.config.schedulers, ["batch", "system"]);
  assert.deepEqual([got.config.numSchedulers, got.config.maxTxnOps, got.config.batch, got.config.seed], [3, 1024, 4, 7]);
  assert.equal(got.address, "a:1,b:2");
  assert.equal(got.token, "secret");
  assert.equal(parse(["--address", "c:3", "--token", "t"], { DROVER_ADDR: "a:1" }).address, "c:3");
});

test("a bad flag value is refused, saying which", () => {
  assert.throws(() => parse(["--batch", "0"], {}), /--batch: 0 is not an integer in 1..256/);
  assert.throws(() => parse(["--max-txn-ops", "x"], {}), /--max-txn-ops/);
  assert.throws(() => parse(["--nope"], {}), /nope/);
});
