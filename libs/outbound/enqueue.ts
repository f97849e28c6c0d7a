/**
 * Way in #1: the library. `enqueueOutbound(client, msg)` (or `(client, boss, msg)`, the earlier
 * form, whose ledger argument is ignored) runs on the caller's transaction
 * client, so the message exists exactly when the caller's own writes commit. Idempotent by msg_id
 * for good (relay.outbound_upsert in SQL, shared with the SQL function): the same payload returns the
 * existing message (`created: false`), a different one throws `OutboundConflictError` without
 * aborting the caller's transaction. The ledger job is created by the same statement as the row
 * (the row JobLedger.insertJobs writes), and idle workers are notified when the transaction commits.
 */
import type { JobLedger } from '../db/boss';
import type { PoolClient } from 'pg';
import { newJobId } from '../queue/enqueue';
import { fromSqlError, OutboundConflictError, OutboundValidationError } from './errors';
import {
  OUTBOUND_LANES,
  OutboundLane,
  OutboundMessage,
  OutboundMessageInput,
  OutboundState,
  validateOutboundMessage,
} from './message';
import { outboundSetTraceparent, outboundUploadsInsert, outboundUpsertMany } from './queries';

/** What a caller does not have to say: the bot and the default chat (OPS_CHAT_ID). */
export interface OutboundDefaults {
  /** Default bot id; else relay.outbound_settings (written by workers). */
  botId?: string | null;
  /** Chat of messages enqueued without chat_id; else relay.outbound_settings. */
  defaultChatId?: string | null;
}

export interface EnqueueOptions extends OutboundDefaults {
  /**
   * `error` (default): a msg_id taken by a different payload throws OutboundConflictError.
   * `keep`: the existing message stands and is returned with `created: false` (handler replies,
   * whose ids name the update rather than the payload).
   */
  onConflict?: 'error' | 'keep';
  /**
   * The lane of the messages that do not name one (default `interactive`): `bulk` for broadcasts,
   * which use only the rate budget interactive messages leave.
   */
  lane?: OutboundLane;
  /**
   * `false`: no NOTIFY wakes the workers; the caller claims the rows in its transaction or wakes
   * them itself (a worker handing its replies to its own outbound loop). Default `true`.
   */
  wake?: boolean;
}

export interface EnqueuedOutbound {
  id: string;
  msgId: string;
  /** False when the message already existed with the same payload (nothing written). */
  created: boolean;
  state: OutboundState;
  /** Null for an answer to a query (it belongs to no chat). */
  targetChatId: string | null;
  jobId: string | null;
}

/**
 * The ledger argument of the earlier forms, accepted and ignored: the upsert statement writes the
 * job rows itself (the rows JobLedger.insertJobs writes, on the ledger schema).
 */
export type OutboundLedger = Pick<JobLedger, 'insertJobs'>;

/** Enqueues one message in the caller's transaction. See the module comment. */
export function enqueueOutbound(
  client: PoolClient,
  msg: OutboundMessageInput,
  opts?: EnqueueOptions,
): Promise<EnqueuedOutbound>;
export function enqueueOutbound(
  client: PoolClient,
  boss: OutboundLedger,
  msg: OutboundMessageInput,
  opts?: EnqueueOptions,
): Promise<EnqueuedOutbound>;
export async function enqueueOutbound(
  client: PoolClient,
  ...args: [OutboundMessageInput, EnqueueOptions?] | [OutboundLedger, OutboundMessageInput, EnqueueOptions?]
): Promise<EnqueuedOutbound> {
  const [msg, opts] = isLedger(args[0])
    ? [args[1] as OutboundMessageInput, args[2]]
    : [args[0], args[1] as EnqueueOptions | undefined];
  const [r] = await enqueueMany(client, [msg], opts);
  return r;
}

/** A message never has `insertJobs`; a ledger (pg-boss BossLedger or the bare statements) does. */
function isLedger(arg: unknown): arg is OutboundLedger {
  return typeof arg === 'object' && arg !== null && 'insertJobs' in arg && typeof arg.insertJobs === 'function';
}

/**
 * Enqueues several messages in the caller's transaction: one statement writes the rows, their
 * ledger jobs and the workers' wake-up (more only for traced rows and files); ids, and so the
 * per-chat send order, follow the input order. Validation problems of every message
 * are reported together (fields prefixed `[i].` when there is more than one message).
 * `(client, boss, inputs)` is the earlier form (see OutboundLedger).
 */
export function enqueueOutboundBatch(
  client: PoolClient,
  inputs: OutboundMessageInput[],
  opts?: EnqueueOptions,
): Promise<EnqueuedOutbound[]>;
export function enqueueOutboundBatch(
  client: PoolClient,
  boss: OutboundLedger,
  inputs: OutboundMessageInput[],
  opts?: EnqueueOptions,
): Promise<EnqueuedOutbound[]>;
export function enqueueOutboundBatch(
  client: PoolClient,
  ...args: [OutboundMessageInput[], EnqueueOptions?] | [OutboundLedger, OutboundMessageInput[], EnqueueOptions?]
): Promise<EnqueuedOutbound[]> {
  return Array.isArray(args[0])
    ? enqueueMany(client, args[0], args[1] as EnqueueOptions | undefined)
    : enqueueMany(client, args[1] as OutboundMessageInput[], args[2]);
}

async function enqueueMany(
  client: PoolClient,
  inputs: OutboundMessageInput[],
  opts: EnqueueOptions = {},
): Promise<EnqueuedOutbound[]> {
  if (inputs.length === 0) return [];
  const messages = withDefaultLane(validateAll(inputs), inputs, opts.lane);
  const withJobs = messages.map((message) => ({ message, jobId: newJobId() }));
  let rows;
  try {
    rows = await outboundUpsertMany(client, withJobs, opts.defaultChatId ?? null, opts.botId ?? null, opts.wake);
  } catch (err) {
    throw fromSqlError(err, messages.length === 1 ? messages[0]?.msgId : undefined);
  }
  // the caller's trace context, on the rows created here (one more statement, only when traced)
  const traced = rows.flatMap((r, i) => {
    const traceparent = messages[i].traceparent;
    return r.created && traceparent ? [{ id: r.id, traceparent }] : [];
  });
  if (traced.length > 0) await outboundSetTraceparent(client, traced);
  // the files of the rows created here (an existing row keeps the files it was created with)
  for (const [i, r] of rows.entries()) {
    if (r.created && messages[i].uploads.length > 0) await outboundUploadsInsert(client, r.id, messages[i].uploads);
  }
  const conflict = rows.find((r) => r.conflict);
  if (conflict && opts.onConflict !== 'keep')
    throw new OutboundConflictError(conflict.msgId, { id: conflict.id, state: conflict.state });
  return rows.map((r) => ({
    id: r.id,
    msgId: r.msgId,
    created: r.created,
    state: r.state,
    targetChatId: r.targetChatId,
    jobId: r.jobId,
  }));
}

/** Messages that name no lane take the options' one. */
function withDefaultLane(
  messages: OutboundMessage[],
  inputs: OutboundMessageInput[],
  lane: OutboundLane | undefined,
): OutboundMessage[] {
  if (lane === undefined) return messages;
  if (!OUTBOUND_LANES.includes(lane))
    throw new OutboundValidationError([{ field: 'lane', problem: `must be one of ${OUTBOUND_LANES.join(', ')}` }]);
  return messages.map((m, i) => (inputs[i].lane == null ? { ...m, lane } : m));
}

function validateAll(inputs: OutboundMessageInput[]): OutboundMessage[] {
  if (inputs.length === 1) return [validateOutboundMessage(inputs[0])];
  const out: OutboundMessage[] = [];
  const problems: OutboundValidationError['problems'] = [];
  inputs.forEach((input, i) => {
    try {
      out.push(validateOutboundMessage(input));
    } catch (err) {
      if (!(err instanceof OutboundValidationError)) throw err;
      for (const p of err.problems) problems.push({ field: `[${i}].${p.field}`, problem: p.problem });
    }
  });
  if (problems.length) throw new OutboundValidationError(problems);
  return out;
}
