import { test } from "node:test";
import assert from "node:assert/strict";
import type { AckBatchRequest, AckBatchResponse, AckRequest } from "@drover/api/drover/broker/v1/broker";
import type { Connection } from "../src/rpc";
import { DEFAULTS, Worker } from "../src/worker";

/** A broker that answers OUTCOME_UNKNOWN for an evaluation as often as told, then OK. */
function broker(unknown: Record<string, number>): { conn: Connection; sent: string[][] } {
  const sent: string[][] = [];
  const ackBatch = async (req: AckBatchRequest): Promise<AckBatchResponse> => {
    sent.push(req.acks.map((a) => a.evalId));
    return {
      outcomes: req.acks.map((a) => {
        if ((unknown[a.evalId] ?? 0) > 0) {
          unknown[a.evalId]--;
          return { evalId: a.evalId, index: 0n, code: 14, reason: "OUTCOME_UNKNOWN", message: "may have landed" };
        }
        return { evalId: a.evalId, index: 7n, code: 0, reason: "", message: "" };
      }),
    };
  };
  return { conn: { ackBatch } as unknown as Connection, sent };
}

const acks = (ids: string[]): AckRequest[] => ids.map((id) => ({ evalId: id, token: "t" }) as AckRequest);

test("an ack answered OUTCOME_UNKNOWN is sent again, alone; tries are bounded", async () => {
  const once = broker({ e2: 1 });
  const logged: string[] = [];
  const ack = (w: Worker, a: AckRequest[]) => (w as unknown as { ack(a: AckRequest[]): Promise<void> }).ack(a);
  await ack(new Worker(once.conn, DEFAULTS, (m) => logged.push(m)), acks(["e1", "e2", "e3"]));
  assert.deepEqual(once.sent, [["e1", "e2", "e3"], ["e2"]]);
  assert.match(logged[0], /ack e2: .*OUTCOME_UNKNOWN.*sending it again/);
  const always = broker({ e2: 99 });
  await ack(new Worker(always.conn, DEFAULTS, () => {}), acks(["e1", "e2"]));
  assert.deepEqual(always.sent, [["e1", "e2"], ["e2"], ["e2"]]);
});
