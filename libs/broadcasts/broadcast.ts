/**
 * Broadcasts: one message to many chats, stored durably in one transaction (the broadcast row and
 * its whole audience, staged in relay.broadcast_recipients, commit together, so a crash stores
 * nothing or everything), idempotent by the client's key, and steered as a whole. Outbound rows
 * `bcast:{id}:{chat}` are made from the staged recipients at the pace of sending (feeder.ts): the
 * first chunk in the creating transaction, the rest by workers when the bot's bulk lane runs low.
 */
import crypto from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { ledgerStatements, QUEUES, type JobLedger } from '../db/boss';
import { withTransaction } from '../db/pool';
import { notifyWork } from '../queue/enqueue';
import { messageCount } from '../telegram/methods';
import {
  BroadcastKeyConflictError,
  BroadcastNotFoundError,
  BroadcastStateError,
  BroadcastValidationError,
} from './errors';
import { feedAhead } from './pace';
import { validateBroadcast, type BroadcastInput, type BroadcastRequest } from './input';
import { planBroadcast, FREE_BROADCAST_RATE, type BroadcastPlan } from './plan';
import * as q from './queries';

export type BroadcastState = 'pending' | 'running' | 'paused' | 'cancelled' | 'completed';

export interface BroadcastOptions {
  /** The bot when the request names none; else relay.outbound_settings' (written by workers). */
  botId?: string | null;
  /** The bot's free bulk rate per second (OUTBOUND_RATE_PER_BOT); default 30. */
  freeRate?: number;
  /** PAID_BROADCAST_RATE: paid broadcasts allowed at this rate; null/undefined: off. */
  paidRate?: number | null;
}

export interface CreatedBroadcast {
  id: string;
  /** False when the key named an existing broadcast (nothing enqueued). */
  created: boolean;
  recipients: number;
  skipped: number;
  plan: BroadcastPlan;
}

export interface BroadcastStatus {
  id: string;
  bot_id: string;
  key: string | null;
  state: BroadcastState;
  method: string;
  audience: Record<string, unknown>;
  recipients: number;
  counts: {
    pending: number;
    paused: number;
    delivering: number;
    delivered: number;
    failed: number;
    cancelled: number;
    skipped: number;
    blocked: number;
  };
  /** Deliveries per second over the last minute. */
  rate: number;
  /** Seconds until what is left is sent at that rate; null when nothing moves (paused, not started). */
  eta_seconds: number | null;
  plan: BroadcastPlan;
  paid: boolean;
  created_at: string;
}

type Db = Pool | PoolClient;
const isClient = (db: Db): db is PoolClient => 'release' in db && typeof db.release === 'function';
const inTransaction = <T>(db: Db, fn: (c: PoolClient) => Promise<T>): Promise<T> =>
  isClient(db) ? fn(db) : withTransaction(db, fn);

/**
 * Creates a broadcast, stages every chat of its audience and feeds the first chunk (about a minute
 * of sending at the broadcast's rate) into relay.outbound. On a pool it runs
 * its own transaction; on a client, the caller's (the broadcast exists when the caller commits).
 * Throws BroadcastValidationError (bad request, unknown audience, paid without PAID_BROADCAST_RATE)
 * or BroadcastKeyConflictError (the key was used for another request).
 */
export async function broadcast(db: Db, input: BroadcastInput, opts: BroadcastOptions = {}): Promise<CreatedBroadcast> {
  const req = validateBroadcast(input);
  const paidRate = opts.paidRate ?? null;
  if (req.paid === true && paidRate === null)
    throw new BroadcastValidationError([
      { field: 'paid', problem: 'paid broadcasts are off for this bot (set PAID_BROADCAST_RATE to allow them)' },
    ]);
  const paid = req.paid ?? paidRate !== null;
  return inTransaction(db, async (c) => {
    const botId = req.message.botId ?? opts.botId ?? (await q.defaultBotId(c));
    if (!botId)
      throw new BroadcastValidationError([
        {
          field: 'bot_id',
          problem: 'not given and no default bot registered (start a tg-relay worker once, or pass bot_id)',
        },
      ]);
    if (req.audience !== null && !(await q.audienceExists(c, req.audience)))
      throw new BroadcastValidationError([
        { field: 'audience', problem: `no audience named "${req.audience}" is registered` },
      ]);
    const row = rowOf(req, botId, paid);
    const inserted = await q.broadcastInsert(c, row);
    if (!inserted) return existing(c, req.key as string, row.requestSha256);
    const { staged, skipped } = await q.broadcastStage(c, inserted.id, req.chatIds);
    const m = req.message;
    const freeRate = opts.freeRate ?? FREE_BROADCAST_RATE;
    const plan = planBroadcast({
      recipients: staged,
      skipped,
      messageCount: messageCount(m.method, m.params ?? {}),
      freeRate,
      paidRate: paid ? paidRate : null,
    });
    await q.broadcastSetPlan(c, inserted.id, plan);
    // the first chunk now: sending starts without waiting for a worker's feeder tick
    const ahead = feedAhead(paid && paidRate !== null ? Math.max(paidRate, freeRate) : freeRate);
    await q.broadcastFeed(c, inserted.id, ahead.rows, ahead.chunk);
    return { id: inserted.id, created: true, recipients: staged, skipped, plan };
  });
}

function rowOf(req: BroadcastRequest, botId: string, paid: boolean): q.BroadcastInsert {
  const m = req.message;
  // a paid broadcast's sends carry allow_paid_broadcast (Telegram charges for what exceeds 30/s)
  const paidFlag = paid ? { allow_paid_broadcast: true } : {};
  const plain = m.method === 'sendMessage';
  const row = {
    botId,
    key: req.key,
    method: m.method,
    text: m.text,
    parseMode: m.parseMode,
    disableNotification: m.disableNotification,
    replyMarkup: m.replyMarkup,
    sendOptions: plain && (paid || m.sendOptions) ? { ...(m.sendOptions ?? {}), ...paidFlag } : null,
    params: plain ? null : { ...(m.params ?? {}), ...paidFlag },
    audience: req.chatIds ? { chat_ids: req.chatIds.length } : { name: req.audience },
    includeBlocked: req.includeBlocked,
    paid,
  };
  const sha = crypto
    .createHash('sha256')
    .update(JSON.stringify({ ...row, chatIds: req.chatIds, audience: req.audience }))
    .digest('hex');
  return { ...row, requestSha256: sha };
}

async function existing(c: PoolClient, key: string, sha: string): Promise<CreatedBroadcast> {
  const b = await q.broadcastByKey(c, key);
  if (!b) throw new Error(`broadcast key "${key}" was taken and is gone`);
  if (b.request_sha256 !== sha) throw new BroadcastKeyConflictError(key, b.id);
  return {
    id: b.id,
    created: false,
    recipients: b.recipients,
    skipped: b.skipped,
    plan: b.plan,
  };
}

/**
 * The broadcast's state, counts from its rows, rate and ETA; null when there is none with this id.
 * Recipients not fed yet count as pending (paused when it is paused, cancelled when cancelled), so
 * the counts other than skipped add up to recipients.
 */
export async function broadcastStatus(db: Db, id: string): Promise<BroadcastStatus | null> {
  if (!/^\d{1,18}$/.test(id)) return null;
  const b = await q.broadcastById(db, id);
  if (!b) return null;
  return statusOf(b, await q.broadcastCounts(db, id));
}

function statusOf(b: q.BroadcastRow, rows: q.BroadcastCountsRow): BroadcastStatus {
  const n = withUnfed(rows);
  const unfinished = n.pending + n.paused + n.delivering;
  const finished = n.delivered + n.failed + n.cancelled + n.blocked;
  const state: BroadcastState =
    n.state !== 'running'
      ? n.state
      : unfinished === 0
        ? 'completed'
        : finished === 0 && n.delivering === 0
          ? 'pending'
          : 'running';
  const rate = n.window_s > 0 ? n.recent / Math.max(1, n.window_s) : 0;
  const left = n.pending + n.delivering;
  return {
    id: b.id,
    bot_id: b.bot_id,
    key: b.key,
    state,
    method: b.method,
    audience: b.audience,
    recipients: n.recipients,
    counts: {
      pending: n.pending,
      paused: n.paused,
      delivering: n.delivering,
      delivered: n.delivered,
      failed: n.failed,
      cancelled: n.cancelled,
      skipped: n.skipped,
      blocked: n.blocked,
    },
    rate: Math.round(rate * 100) / 100,
    // held rows are not left to send until resumed: a paused broadcast has no ETA, not 0
    eta_seconds: left === 0 && n.paused === 0 ? 0 : rate > 0 && state === 'running' ? Math.ceil(left / rate) : null,
    plan: b.plan,
    paid: b.paid,
    created_at: new Date(b.created_at).toISOString(),
  };
}

/** The unfed recipients counted where the broadcast's state puts them. */
function withUnfed(n: q.BroadcastCountsRow): q.BroadcastCountsRow {
  const u = n.unfed;
  if (n.state === 'paused') return { ...n, paused: n.paused + u };
  if (n.state === 'cancelled') return { ...n, cancelled: n.cancelled + u };
  return { ...n, pending: n.pending + u };
}

/** Newest first; `beforeId` continues a page. */
export async function broadcastsList(
  db: Db,
  a: { limit: number; beforeId?: string | null },
): Promise<BroadcastStatus[]> {
  const rows = await q.broadcastList(db, { limit: a.limit, beforeId: a.beforeId ?? null });
  return Promise.all(rows.map(async (b) => statusOf(b, await q.broadcastCounts(db, b.id))));
}

export type BroadcastAction = 'pause' | 'resume' | 'cancel';

/** Which current states each action is allowed from. */
const ALLOWED: Record<BroadcastAction, BroadcastState[]> = {
  pause: ['pending', 'running'],
  resume: ['paused'],
  cancel: ['pending', 'running', 'paused'],
};

/**
 * pause: the unsent rows become `paused` (no worker claims them) and no recipient is fed; resume:
 * they are pending again, due now, and feeding goes on; cancel: pending and paused rows fail as
 * 'cancelled', their jobs are cancelled and the unfed recipients are dropped. A row in flight
 * finishes its attempt. Returns the status after the action and how many messages it moved (rows
 * and unfed recipients).
 */
export async function broadcastControl(
  db: Db,
  id: string,
  action: BroadcastAction,
  ledger: Pick<JobLedger, 'cancelJobs'> = ledgerStatements,
): Promise<{ status: BroadcastStatus; moved: number }> {
  return inTransaction(db, async (c) => {
    const b = /^\d{1,18}$/.test(id) ? await q.broadcastById(c, id, true) : null;
    if (!b) throw new BroadcastNotFoundError(id);
    const counts = await q.broadcastCounts(c, id);
    const before = statusOf(b, counts);
    if (!ALLOWED[action].includes(before.state)) throw new BroadcastStateError(id, action, before.state);
    let moved: number;
    if (action === 'pause') {
      await q.broadcastSetState(c, id, 'paused');
      moved = (await q.broadcastPauseRows(c, id)) + counts.unfed;
    } else if (action === 'resume') {
      await q.broadcastSetState(c, id, 'running');
      const rows = await q.broadcastResumeRows(c, id);
      if (rows) await notifyWork(c, QUEUES.outbound);
      moved = rows + counts.unfed;
    } else {
      await q.broadcastSetState(c, id, 'cancelled');
      const jobs = await q.broadcastCancelRows(c, id);
      if (jobs.length) await ledger.cancelJobs(c, QUEUES.outbound, jobs);
      await q.broadcastDropRecipients(c, id);
      moved = jobs.length + counts.unfed;
      // a cancelled chat head lets the chat's next message go
      if (jobs.length) await notifyWork(c, QUEUES.outbound);
    }
    const after = await q.broadcastById(c, id);
    return { status: statusOf(after as q.BroadcastRow, await q.broadcastCounts(c, id)), moved };
  });
}

/** Registers (or replaces) a named audience: a query returning one column of chat ids, with $1 the bot id. */
export async function registerAudience(
  db: Db,
  a: { name: string; sql: string; description?: string | null },
): Promise<void> {
  if (!/^[a-z][a-z0-9_-]{0,62}$/.test(a.name))
    throw new BroadcastValidationError([
      { field: 'name', problem: 'must be lowercase letters, digits, _ and - (1..63)' },
    ]);
  // the query must at least parse and return one column: checked by running it with no rows wanted
  await inTransaction(db, async (c) => {
    await c.query('savepoint audience_check');
    try {
      await c.query(
        `select count(*) from (select * from (${a.sql}) as q(chat_id) limit 0) x`,
        /\$1\b/.test(a.sql) ? ['0'] : [],
      );
    } catch (err) {
      await c.query('rollback to savepoint audience_check');
      throw new BroadcastValidationError(
        [{ field: 'sql', problem: `does not run as one column of chat ids: ${(err as Error).message}` }],
        { cause: err },
      );
    }
    await q.audienceSave(c, a);
  });
}
