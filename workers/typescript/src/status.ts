/**
 * What a failed call said (pure over grpc-js's error shape): the status
 * code's name, the details, and the google.rpc.ErrorInfo every drover
 * service attaches (reason and metadata, in the `grpc-status-details-bin`
 * trailer), plus the `drover-leader` hint a follower answers with. The
 * Python reference: drover.rpc.remote.
 */
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Metadata, status as Status } from "@grpc/grpc-js";

const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
export const LEADER_METADATA = "drover-leader";

export interface RemoteStatus {
  code: string;
  details: string;
  reason: string;
  metadata: Record<string, string>;
  leader: string | null;
  /** A server answered (drover servers always attach trailing metadata). */
  answered: boolean;
}

/** google.rpc.ErrorInfo {reason = 1, domain = 2, map<string,string> metadata = 3}. */
function decodeErrorInfo(bytes: Uint8Array): { reason: string; metadata: Record<string, string> } {
  const r = new BinaryReader(bytes);
  const out = { reason: "", metadata: {} as Record<string, string> };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) out.reason = r.string();
    else if (field === 3) {
      const entry = new BinaryReader(r.bytes());
      let key = "";
      let value = "";
      while (entry.pos < entry.len) {
        const [f, w] = entry.tag();
        if (f === 1) key = entry.string();
        else if (f === 2) value = entry.string();
        else entry.skip(w);
      }
      out.metadata[key] = value;
    } else r.skip(wire);
  }
  return out;
}

/** The ErrorInfo in a google.rpc.Status {code = 1, message = 2, repeated Any details = 3}. */
export function errorInfo(statusBytes: Uint8Array): { reason: string; metadata: Record<string, string> } | null {
  const r = new BinaryReader(statusBytes);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field !== 3) {
      r.skip(wire);
      continue;
    }
    const any = new BinaryReader(r.bytes());
    let typeUrl = "";
    let value: Uint8Array = new Uint8Array();
    while (any.pos < any.len) {
      const [f, w] = any.tag();
      if (f === 1) typeUrl = any.string();
      else if (f === 2) value = any.bytes();
      else any.skip(w);
    }
    if (typeUrl === ERROR_INFO_TYPE) return decodeErrorInfo(value);
  }
  return null;
}

export function codeName(code: number): string {
  return (Status as unknown as Record<number, string>)[code] ?? "UNKNOWN";
}

/** Decode a failed call once. */
export function remoteStatus(err: unknown): RemoteStatus {
  const e = err as { code?: number; details?: string; message?: string; metadata?: Metadata };
  const md = e.metadata instanceof Metadata ? e.metadata : null;
  const raw = md?.get("grpc-status-details-bin")[0];
  let info: { reason: string; metadata: Record<string, string> } | null = null;
  if (raw instanceof Uint8Array) {
    try {
      info = errorInfo(raw);
    } catch {
      info = null; // a status without parseable details
    }
  }
  const leader = md?.get(LEADER_METADATA)[0];
  return {
    code: typeof e.code === "number" ? codeName(e.code) : "UNKNOWN",
    details: e.details ?? e.message ?? String(err),
    reason: info?.reason ?? "",
    metadata: info?.metadata ?? {},
    leader: leader === undefined ? null : leader.toString(),
    answered: md !== null && Object.keys(md.getMap()).length > 0,
  };
}

export function isRpcError(err: unknown): boolean {
  return typeof (err as { code?: unknown })?.code === "number" && (err as { metadata?: unknown }).metadata !== undefined;
}

export function describe(err: unknown): string {
  if (!isRpcError(err)) return err instanceof Error ? err.message : String(err);
  const s = remoteStatus(err);
  return `${s.details} (${s.reason || s.code})`;
}
