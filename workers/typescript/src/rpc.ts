/**
 * The worker's connection to drover: one client per address for the eval
 * broker and the state service, the ACL token on every call
 * (`authorization: Bearer <secret>`), a deadline per call. Several
 * addresses (`a:7100,b:7100`, e.g. every proxy replica) are tried in a
 * random order: a read that ends UNAVAILABLE moves on to the next address
 * (repeating a read is harmless); a write is never sent twice (its
 * UNAVAILABLE, OUTCOME_UNKNOWN included, is the caller's answer: the
 * worker's plans are guarded by their compares and delivery token), but the
 * next call starts on the next address. A `drover-leader` hint that names
 * one of the addresses is where the next call goes.
 */
import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import * as broker from "@drover/api/drover/broker/v1/broker";
import { EvalBrokerServiceClient } from "@drover/api/drover/broker/v1/broker";
import * as state from "@drover/api/drover/state/v1/state";
import { StateServiceClient } from "@drover/api/drover/state/v1/state";
import { remoteStatus } from "./status";

export interface Tls {
  ca: string;
  cert: string;
  key: string;
}

export function splitAddresses(address: string): string[] {
  return [...new Set(address.split(",").map((a) => a.trim()).filter(Boolean))];
}

type Unary<Req, Resp> = (req: Req, md: grpc.Metadata, opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, resp: Resp) => void) => grpc.ClientUnaryCall;

interface Clients {
  broker: EvalBrokerServiceClient;
  state: StateServiceClient;
}

export class Connection {
  private readonly order: string[];
  private readonly clients = new Map<string, Clients>();
  private at = 0;

  constructor(address: string, private readonly token: string, tls?: Tls) {
    this.order = splitAddresses(address);
    if (!this.order.length) throw new Error("no address");
    for (let i = this.order.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [this.order[i], this.order[j]] = [this.order[j], this.order[i]];
    }
    const creds = tls?.ca
      ? grpc.credentials.createSsl(readFileSync(tls.ca), tls.key ? readFileSync(tls.key) : null,
        tls.cert ? readFileSync(tls.cert) : null)
      : grpc.credentials.createInsecure();
    const options = { "grpc.max_receive_message_length": 64 << 20, "grpc.keepalive_time_ms": 30000 };
    for (const a of this.order) {
      this.clients.set(a, {
        broker: new EvalBrokerServiceClient(a, creds, options),
        state: new StateServiceClient(a, creds, options),
      });
    }
  }

  metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.token) md.set("authorization", `Bearer ${this.token}`);
    return md;
  }

  private current(): Clients {
    return this.clients.get(this.order[this.at % this.order.length])!;
  }

  private moveOn(err: unknown): void {
    const hint = remoteStatus(err).leader;
    const i = hint === null ? -1 : this.order.indexOf(hint);
    this.at = i >= 0 ? i : this.at + 1;
  }

  /** One unary call; `read`: safe to repeat on the next address after UNAVAILABLE. */
  private async unary<Req, Resp>(service: keyof Clients, method: string, req: Req, timeoutSec: number,
    read: boolean): Promise<Resp> {
    const tries = read ? this.order.length : 1;
    const deadline = Date.now() + timeoutSec * 1000;
    for (let i = 0; ; i++) {
      const client = this.current()[service] as unknown as Record<string, Unary<Req, Resp>>;
      try {
        return await new Promise<Resp>((resolve, reject) => {
          client[method].call(client, req, this.metadata(), { deadline },
            (err, resp) => (err ? reject(err) : resolve(resp)));
        });
      } catch (err) {
        const code = (err as grpc.ServiceError).code;
        if (code === grpc.status.UNAVAILABLE || remoteStatus(err).leader !== null) this.moveOn(err);
        if (!(read && code === grpc.status.UNAVAILABLE && i + 1 < tries && Date.now() < deadline)) throw err;
      }
    }
  }

  dequeue(req: broker.DequeueRequest, timeoutSec: number): Promise<broker.DequeueResponse> {
    return this.unary("broker", "dequeue", req, timeoutSec, false);
  }

  ackBatch(req: broker.AckBatchRequest, timeoutSec: number): Promise<broker.AckBatchResponse> {
    return this.unary("broker", "ackBatch", req, timeoutSec, false);
  }

  nack(req: broker.NackRequest, timeoutSec: number): Promise<broker.NackResponse> {
    return this.unary("broker", "nack", req, timeoutSec, false);
  }

  outstandingReset(req: broker.OutstandingResetRequest, timeoutSec: number): Promise<broker.OutstandingResetResponse> {
    return this.unary("broker", "outstandingReset", req, timeoutSec, false);
  }

  getJobSnapshot(req: state.GetJobSnapshotRequest, timeoutSec: number): Promise<state.GetJobSnapshotResponse> {
    return this.unary("state", "getJobSnapshot", req, timeoutSec, true);
  }

  listNodes(req: state.ListNodesRequest, timeoutSec: number): Promise<state.ListNodesResponse> {
    return this.unary("state", "listNodes", req, timeoutSec, true);
  }

  listAllocations(req: state.ListAllocationsRequest, timeoutSec: number): Promise<state.ListAllocationsResponse> {
    return this.unary("state", "listAllocations", req, timeoutSec, true);
  }

  submitPlan(req: state.SubmitPlanRequest, timeoutSec: number): Promise<state.SubmitPlanResponse> {
    return this.unary("state", "submitPlan", req, timeoutSec, false);
  }

  /** The Subscribe stream on the current address. */
  subscribe(req: state.SubscribeRequest): grpc.ClientReadableStream<state.SubscribeResponse> {
    return this.current().state.subscribe(req, this.metadata());
  }

  /** After a stream broke: the next one opens on the next address. */
  streamFailed(err: unknown): void {
    this.moveOn(err);
  }

  close(): void {
    for (const c of this.clients.values()) {
      c.broker.close();
      c.state.close();
    }
  }
}
