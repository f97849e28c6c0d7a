/**
 * One batch of fetched JetStream messages → relay.outbound, in one transaction, then the NATS
 * dispositions (only after the commit):
 *
 * | message                                              | database (same transaction)        | NATS  |
 * |------------------------------------------------------|------------------------------------|-------|
 * | valid, new msg_id                                    | outbound row + ledger job         | ack   |
 * | valid, msg_id exists with the same payload           | nothing (idempotent republish)     | ack   |
 * | valid, msg_id exists with another payload            | jetstream_rejects + attempts audit | ack   |
 * | invalid JSON / contract violation                    | jetstream_rejects                  | term  |
 * | one the database refuses (TR422, SQLSTATE class 22)  | batch split: jetstream_rejects     | term  |
 * | an alert of ours (alert subject or Tg-Relay-Alert)   | nothing (loop guard)               | ack   |
 * | the database failed                                  | rolled back                        | nak(backoff) |
 *
 * A message the database refuses (its data, not the database, is at fault) never holds back its
 * batch: the batch is split until that message stands alone, then recorded and termed; its
 * companions commit and are acked.
 *
 * A crash between commit and ack redelivers the batch: the upsert finds the same payloads and the
 * reject records are unique per (stream, seq, content), so nothing is enqueued or recorded twice.
 */
import { errorCode, fieldOf } from '../errors';
import { backoffMs } from '../lifecycle/backoff';
import crypto from 'node:crypto';
import type { Pool } from 'pg';
import { withTransaction } from '../db/pool';
import { storableText } from '../db/storable-json';
import type { Logger } from '../observability/logger';
import { SQLSTATE_OUTBOUND_INVALID } from '../outbound/errors';
import { outboundUpsertMany } from '../outbound/queries';
import { newJobId } from '../queue/enqueue';
import { decodeTelegramOutbound } from './contract';
import {
  jetstreamConflictAudit,
  jetstreamRejectInsertMany,
  outboundPublisherKinds,
  outboundSetPublisherKinds,
  RejectRecord,
} from './queries';

/** What the bridge needs of a JetStream message (a seam for the source). */
export interface BridgeMessage {
  data: Uint8Array;
  subject: string;
  /** Stream sequence. */
  seq: number;
  /** Nats-Msg-Id header, if any. */
  natsMsgId: string | null;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** Carries our alert header (Tg-Relay-Alert). */
  alertHeader: boolean;
  ack(): void;
  /** Never redelivered (the reason is logged and recorded by us: nats-server 2.9 ignores +TERM reasons). */
  term(reason: string): void;
  nak(delayMs: number): void;
}

export interface IngestDeps {
  pool: Pool;
  logger: Logger;
  stream: string;
  alertSubject: string;
  /** Bot of the rows (null: relay.outbound_settings). */
  botId: string | null;
  /** OPS_CHAT_ID (null: relay.outbound_settings). */
  defaultChatId: string | null;
  /** First nak delay after a database error; doubles per redelivery up to NAK_BACKOFF_MAX_MS. */
  nakBackoffMs: number;
}

export const NAK_BACKOFF_MAX_MS = 300_000;

export interface BatchResult {
  created: number;
  duplicates: number;
  conflicts: number;
  rejected: number;
  skipped: number;
  /** Naked after a database error (0 when the batch committed). */
  naked: number;
  error?: unknown;
}

type Valid = {
  m: BridgeMessage;
  message: NonNullable<Extract<ReturnType<typeof decodeTelegramOutbound>, { ok: true }>['message']>;
  publisherKind: string | null;
};

const sha256 = (b: Uint8Array) => crypto.createHash('sha256').update(b).digest('hex');

function reject(
  deps: IngestDeps,
  m: BridgeMessage,
  reason: RejectRecord['reason'],
  error: string,
  msgId: string | null,
  outboundId: string | null = null,
): RejectRecord {
  return {
    stream: deps.stream,
    subject: storableText(m.subject),
    streamSeq: m.seq,
    // a header is any bytes to NATS: the record keeps what a text column can hold
    natsMsgId: m.natsMsgId === null ? null : storableText(m.natsMsgId),
    msgId,
    reason,
    error,
    outboundId,
    raw: m.data,
    sha256: sha256(m.data),
  };
}

/**
 * The redelivery delay asked of NATS after a database error: NAK_BACKOFF base, doubled per delivery
 * already made, capped. No jitter: the delay is a contract with the stream (a test pins its steps).
 */
export function nakDelayMs(baseMs: number, deliveryCount: number): number {
  return backoffMs({ baseMs, capMs: NAK_BACKOFF_MAX_MS, jitter: 'none' }, deliveryCount);
}

/** Processes one batch; never throws (a database error naks the batch and is returned in `error`). */
export async function ingestBatch(deps: IngestDeps, batch: BridgeMessage[]): Promise<BatchResult> {
  const result = emptyResult();
  const valid: Valid[] = [];
  const invalid: { m: BridgeMessage; record: RejectRecord }[] = [];
  /** The batch without our own alerts, in stream order. */
  const taken: BridgeMessage[] = [];
  for (const m of batch) {
    if (m.alertHeader || m.subject === deps.alertSubject) {
      // loop guard: an alert we published never comes back in as a Telegram message
      m.ack();
      result.skipped++;
      continue;
    }
    taken.push(m);
    const d = decodeTelegramOutbound(m.data);
    if (d.ok) valid.push({ m, message: d.message, publisherKind: d.publisherKind });
    else invalid.push({ m, record: reject(deps, m, d.reason, d.error, d.msgId) });
  }
  if (taken.length === 0) return result;
  // Chats in one global order (stable: a chat's messages keep their stream order, which is its send
  // order): relay.outbound_upsert locks each chat until commit, and bridges taking the same chats in
  // different orders would deadlock each other.
  valid.sort((a, b) => {
    const ka = a.message.chatId ?? '';
    const kb = b.message.chatId ?? '';
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });

  try {
    const outcome = await commit(
      deps,
      valid,
      invalid.map((i) => i.record),
    );
    for (const i of invalid) termRefused(deps, i.m, i.record, 'jetstream message refused');
    for (const [n, v] of valid.entries()) {
      const o = outcome[n];
      if (o.kind === 'conflict') {
        deps.logger.warn(
          { seq: v.m.seq, msgId: v.message.msgId, outboundId: o.outboundId },
          'jetstream message conflicts with an existing msg_id (acked, recorded)',
        );
      }
      v.m.ack();
      if (o.kind === 'created') result.created++;
      else if (o.kind === 'duplicate') result.duplicates++;
      else result.conflicts++;
    }
    result.rejected = invalid.length;
    return result;
  } catch (err) {
    const fault = messageFault(err);
    if (fault === undefined) return nakAll(deps, taken, result, err);
    if (taken.length > 1) return split(deps, taken, result, err);
    // the database refused this one message: record it instead of naking it forever
    const m = taken[0];
    const v = valid.find((x) => x.m === m);
    // a valid message's msg_id passed the contract; a refused reject record's may be what the database refused
    const record = v
      ? reject(deps, m, 'invalid', fault, v.message.msgId)
      : reject(deps, m, invalid[0].record.reason, `${invalid[0].record.error}; ${fault}`, null);
    try {
      await jetstreamRejectInsertMany(deps.pool, [record]);
    } catch (e2) {
      return nakAll(deps, taken, result, e2);
    }
    termRefused(deps, m, record, 'jetstream message refused by the database');
    return { ...result, rejected: 1 };
  }
}

/** Logs (never the content) and terms a message recorded in relay.jetstream_rejects. */
function termRefused(deps: IngestDeps, m: BridgeMessage, record: RejectRecord, what: string): void {
  deps.logger.warn(
    { seq: m.seq, natsMsgId: record.natsMsgId, subject: m.subject, reason: record.reason, error: record.error },
    `${what} (termed, recorded in relay.jetstream_rejects)`,
  );
  m.term(`${record.reason}: ${record.error}`.slice(0, 200));
}

/** What PostgreSQL's data exceptions (SQLSTATE class 22) mean, for the reject record (their texts may quote the value). */
const DATA_EXCEPTIONS: Record<string, string> = {
  '22001': 'a value too long for its column',
  '22003': 'a number out of range',
  '22021': 'a byte sequence that is not valid UTF-8',
  '22023': 'an invalid parameter value',
  '22P02': 'an invalid text representation',
  '22P05': 'a character PostgreSQL text cannot hold (NUL or an unpaired surrogate)',
};

/**
 * Why the database refused the batch because of what a message carries (its fault, not the
 * database's): the outbound relay's own refusal (TR422, its text is ours) or a data exception,
 * SQLSTATE class 22, named by code only. undefined for every other error (the database failed).
 */
export function messageFault(err: unknown): string | undefined {
  const code = errorCode(err) ?? '';
  if (code === SQLSTATE_OUTBOUND_INVALID) {
    const message = fieldOf(err, 'message');
    return (typeof message === 'string' ? message : '').replace(/^RELAY_OUTBOUND_INVALID:\s*/, '');
  }
  if (/^22[0-9A-Z]{3}$/.test(code))
    return `the database refused it: SQLSTATE ${code} (${DATA_EXCEPTIONS[code] ?? 'a data exception'})`;
  return undefined;
}

/**
 * A batch the database refused because of one (or more) of its messages: each half in its own
 * transaction, in stream order, until the offending messages stand alone (about 2·log2(n)
 * transactions for one poison message). The valid companions are stored and acked, never naked.
 */
async function split(deps: IngestDeps, taken: BridgeMessage[], result: BatchResult, err: unknown) {
  deps.logger.info(
    { messages: taken.length, code: errorCode(err) },
    'jetstream batch refused because of a message: splitting it to find that message',
  );
  const acc: BatchResult = { ...result };
  const mid = Math.ceil(taken.length / 2);
  for (const half of [taken.slice(0, mid), taken.slice(mid)]) {
    // the database failed for the first half: the second would fail the same way; nak it untried
    const r = acc.error ? nakAll(deps, half, emptyResult(), acc.error) : await ingestBatch(deps, half);
    acc.created += r.created;
    acc.duplicates += r.duplicates;
    acc.conflicts += r.conflicts;
    acc.rejected += r.rejected;
    acc.naked += r.naked;
    acc.error ??= r.error;
  }
  return acc;
}

const emptyResult = (): BatchResult => ({
  created: 0,
  duplicates: 0,
  conflicts: 0,
  rejected: 0,
  skipped: 0,
  naked: 0,
});

function nakAll(deps: IngestDeps, msgs: BridgeMessage[], result: BatchResult, err: unknown): BatchResult {
  for (const m of msgs) m.nak(nakDelayMs(deps.nakBackoffMs, m.deliveryCount));
  deps.logger.warn(
    { err: { code: fieldOf(err, 'code'), message: fieldOf(err, 'message') }, messages: msgs.length },
    'jetstream batch not committed (database error): naked with backoff, stays in the stream',
  );
  return { ...result, naked: msgs.length, error: err };
}

type Outcome = { kind: 'created' } | { kind: 'duplicate' } | { kind: 'conflict'; outboundId: string };

async function commit(deps: IngestDeps, valid: Valid[], rejects: RejectRecord[]): Promise<Outcome[]> {
  return withTransaction(deps.pool, async (client) => {
    const withJobs = valid.map((v) => ({ message: v.message, jobId: newJobId() }));
    const rows = await outboundUpsertMany(client, withJobs, deps.defaultChatId, deps.botId);
    // one batch may carry the same msg_id twice: the second sees the first as existing (same payload → duplicate)
    const existing = rows.filter((r) => !r.created && !r.conflict).map((r) => r.id);
    const kinds = await outboundPublisherKinds(client, existing);
    const createdNow = new Map<string, string | null>();
    const outcomes: Outcome[] = rows.map((r, n) => {
      const pk = valid[n].publisherKind;
      if (r.created) {
        createdNow.set(r.id, pk);
        return { kind: 'created' };
      }
      if (r.conflict) return { kind: 'conflict', outboundId: r.id };
      const stored = createdNow.has(r.id) ? createdNow.get(r.id) : kinds.get(r.id);
      return (stored ?? null) === pk ? { kind: 'duplicate' } : { kind: 'conflict', outboundId: r.id };
    });
    const created = rows.filter((r) => r.created);
    await outboundSetPublisherKinds(
      client,
      created.flatMap((r) => {
        const k = createdNow.get(r.id);
        return k ? [{ id: r.id, kind: k }] : [];
      }),
    );
    const conflicts = outcomes.flatMap((o, n) => (o.kind === 'conflict' ? [{ n, outboundId: o.outboundId }] : []));
    await jetstreamConflictAudit(
      client,
      conflicts.map((c) => ({
        outboundId: c.outboundId,
        msgId: valid[c.n].message.msgId,
        streamSeq: valid[c.n].m.seq,
        stream: deps.stream,
      })),
    );
    await jetstreamRejectInsertMany(client, [
      ...rejects,
      ...conflicts.map((c) =>
        reject(
          deps,
          valid[c.n].m,
          'conflict',
          `msg_id exists (outbound id ${c.outboundId}) with a different payload`,
          valid[c.n].message.msgId,
          c.outboundId,
        ),
      ),
    ]);
    return outcomes;
  });
}
