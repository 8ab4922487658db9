#!/usr/bin/env node
/**
 * `drover-worker-ts`: the TypeScript scheduler worker, with the flags of
 * `drover worker` (the Python reference): --address (DROVER_ADDR; several,
 * comma-separated), --scheduler (repeatable), --num-schedulers,
 * --max-txn-ops, --batch, --seed, --token (DROVER_TOKEN), --tls-ca,
 * --tls-cert, --tls-key (DROVER_TLS_*). SIGTERM or SIGINT stops it.
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { MAX_TXN_OPS } from "./planSize";
import { Connection } from "./rpc";
import { DEFAULTS, Worker, type WorkerConfig } from "./worker";

export const DEFAULT_ADDRESS = "127.0.0.1:7100";

const USAGE = `Usage: drover-worker-ts [OPTIONS]

  Run the TypeScript scheduler worker: dequeue, plan, submit, ack.

Options:
  --address TEXT            drover server (the proxy)  [default: ${DEFAULT_ADDRESS}]
  --scheduler TEXT          scheduler types to dequeue (repeatable)  [default: service, batch, system]
  --num-schedulers INT      scheduling loops run side by side (default: one per core)
  --max-txn-ops INT         etcd's --max-txn-ops as the cluster runs it  [default: ${MAX_TXN_OPS}]
  --batch INT               evaluations per Dequeue  [default: 16]
  --seed INT                seed of the placement shuffle
  --token TEXT              ACL token secret id (default: anonymous; DROVER_TOKEN)
  --tls-ca, --tls-cert, --tls-key PATH   TLS (DROVER_TLS_CA, DROVER_TLS_CERT, DROVER_TLS_KEY)
  --help                    Show this message and exit.`;

function intIn(name: string, raw: string | undefined, lo: number, hi: number, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < lo || n > hi) {
    throw new Error(`invalid value for --${name}: ${raw} is not an integer in ${lo}..${hi}`);
  }
  return n;
}

export function parse(argv: string[], env: NodeJS.ProcessEnv): { config: WorkerConfig; address: string; token: string;
  tls: { ca: string; cert: string; key: string }; help: boolean } {
  const { values } = parseArgs({
    args: argv, strict: true,
    options: {
      address: { type: "string" }, scheduler: { type: "string", multiple: true },
      "num-schedulers": { type: "string" }, "max-txn-ops": { type: "string" }, batch: { type: "string" },
      seed: { type: "string" }, token: { type: "string" }, "tls-ca": { type: "string" },
      "tls-cert": { type: "string" }, "tls-key": { type: "string" }, help: { type: "boolean" },
    },
  });
  const config: WorkerConfig = {
    ...DEFAULTS,
    schedulers: values.scheduler?.length ? values.scheduler : DEFAULTS.schedulers,
    numSchedulers: intIn("num-schedulers", values["num-schedulers"], 1, 256, availableParallelism()),
    maxTxnOps: intIn("max-txn-ops", values["max-txn-ops"], 16, 1 << 20, MAX_TXN_OPS),
    batch: intIn("batch", values.batch, 1, 256, DEFAULTS.batch),
    seed: values.seed === undefined ? null : intIn("seed", values.seed, -(2 ** 31), 2 ** 32, 0),
  };
  return {
    config, address: values.address ?? env.DROVER_ADDR ?? DEFAULT_ADDRESS, token: values.token ?? env.DROVER_TOKEN ?? "",
    tls: { ca: values["tls-ca"] ?? env.DROVER_TLS_CA ?? "", cert: values["tls-cert"] ?? env.DROVER_TLS_CERT ?? "",
      key: values["tls-key"] ?? env.DROVER_TLS_KEY ?? "" },
    help: !!values.help,
  };
}

async function main(): Promise<number> {
  let opts: ReturnType<typeof parse>;
  try {
    opts = parse(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`drover-worker-ts: ${(err as Error).message}; see --help`);
    return 2;
  }
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  const conn = new Connection(opts.address, opts.token, opts.tls);
  const worker = new Worker(conn, opts.config);
  const stop = (): void => worker.stop();
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  console.log(`worker: ${opts.config.numSchedulers} schedulers dequeuing ${opts.config.schedulers.join(", ")} `
    + `from ${opts.address} (typescript)`);
  const running = worker.run();
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
    running.then(() => resolve(), (err) => {
      console.error(`worker: ${(err as Error)?.stack ?? err}`);
      resolve();
    });
  });
  // A Dequeue long-poll may be in flight: stop within the Python worker's bound (5 s).
  await Promise.race([running.catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
  console.log(`worker: stopped after ${worker.stats.evaluations} evaluations, ${worker.stats.placed} placements`);
  conn.close();
  return 0;
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}
