/**
 * All SQL of the JetStream bridge, one function per statement (entity-first names), values only as
 * $n parameters. The enqueue itself is relay.outbound_upsert (libs/outbound/queries.ts).
 */
import type { Queryable } from '../db/pool';

export interface RejectRecord {
  stream: string;
  subject: string;
  streamSeq: number;
  natsMsgId: string | null;
  msgId: string | null;
  reason: 'invalid_json' | 'invalid' | 'conflict';
  error: string;
  outboundId: string | null;
  raw: Uint8Array;
  sha256: string;
}

/** Records refused/conflicting messages; a redelivered one (same stream seq and content) adds nothing. */
export async function jetstreamRejectInsertMany(db: Queryable, rejects: RejectRecord[]): Promise<void> {
  if (rejects.length === 0) return;
  await db.query(
    `insert into relay.jetstream_rejects (stream, subject, stream_seq, nats_msg_id, msg_id, reason, error, outbound_id, raw, sha256)
     select x.stream, x.subject, x.stream_seq, x.nats_msg_id, x.msg_id, x.reason, x.error, x.outbound_id, decode(x.raw, 'base64'), x.sha256
       from json_to_recordset($1::json) as x(stream text, subject text, stream_seq bigint, nats_msg_id text, msg_id text, reason text,
              error text, outbound_id bigint, raw text, sha256 text)
     on conflict (stream, stream_seq, sha256) do nothing`,
    [
      JSON.stringify(
        rejects.map((r) => ({
          stream: r.stream,
          subject: r.subject,
          stream_seq: r.streamSeq,
          nats_msg_id: r.natsMsgId,
          msg_id: r.msgId,
          reason: r.reason,
          error: r.error,
          outbound_id: r.outboundId,
          raw: Buffer.from(r.raw).toString('base64'),
          sha256: r.sha256,
        })),
      ),
    ],
  );
}

/** An audit row on the existing message when a JetStream republish of its msg_id carried another payload. */
export async function jetstreamConflictAudit(
  db: Queryable,
  rows: { outboundId: string; msgId: string; streamSeq: number; stream: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `insert into relay.attempts (subject, subject_id, subject_key, outcome, error_code, error, details, finished_at)
     select 'outbound', x.id, x.msg_id, 'conflict', 'RELAY_OUTBOUND_CONFLICT', 'JetStream message with this msg_id and a different payload (acked, not enqueued)',
            jsonb_build_object('source', 'jetstream', 'stream', x.stream, 'streamSeq', x.seq), now()
       from json_to_recordset($1::json) as x(id bigint, msg_id text, stream text, seq bigint)`,
    [JSON.stringify(rows.map((r) => ({ id: r.outboundId, msg_id: r.msgId, stream: r.stream, seq: r.streamSeq })))],
  );
}

/** publisher_kind of existing rows (to tell a same-payload republish from one with another kind). */
export async function outboundPublisherKinds(db: Queryable, ids: string[]): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; publisher_kind: string | null }>(
    'select id::text as id, publisher_kind from relay.outbound where id = any($1::bigint[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.publisher_kind ?? null]));
}

/** Sets publisher_kind on rows just created by the bridge. */
export async function outboundSetPublisherKinds(db: Queryable, items: { id: string; kind: string }[]): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `update relay.outbound o set publisher_kind = x.kind
       from json_to_recordset($1::json) as x(id bigint, kind text) where o.id = x.id`,
    [JSON.stringify(items)],
  );
}

export interface AlertToPublish {
  id: string;
  msgId: string;
  botId: string;
  chatId: string;
  text: string;
  createdAt: Date;
  failed: {
    id: string;
    msgId: string;
    chatId: string;
    targetChatId: string;
    publisherKind: string | null;
    attempts: number;
    lastStatus: number | null;
    reason: string | null;
    failedAt: Date;
  } | null;
}

/**
 * Takes the alert cursor of `subject` (skip if another bridge holds it) and returns the relay alerts
 * after it with the message each one is about. Returns null when another bridge holds the cursor.
 */
/** The first bridge on a subject starts at the newest alert (no backlog of alerts older than the bridge). */
export async function jetstreamAlertCursorInit(db: Queryable, subject: string): Promise<void> {
  await db.query(
    `insert into relay.jetstream_alert_cursor (subject, last_outbound_id)
     values ($1, coalesce((select max(id) from relay.outbound where kind = 'alert'), 0))
     on conflict (subject) do nothing`,
    [subject],
  );
}

/** An alert as jetstreamAlertClaim selects it; the f_ columns are the failed message's (left join: all null without one). */
type AlertDbRow = {
  id: string;
  msg_id: string;
  bot_id: string;
  chat_id: string;
  text: string;
  created_at: Date;
} & (
  | {
      f_id: string;
      f_msg_id: string;
      f_chat_id: string;
      f_target: string;
      f_pkind: string | null;
      f_attempts: number;
      f_status: number | null;
      f_reason: string | null;
      f_at: Date;
    }
  | {
      f_id: null;
      f_msg_id: null;
      f_chat_id: null;
      f_target: null;
      f_pkind: null;
      f_attempts: null;
      f_status: null;
      f_reason: null;
      f_at: null;
    }
);

export async function jetstreamAlertClaim(
  db: Queryable,
  subject: string,
  limit: number,
): Promise<{ after: string; alerts: AlertToPublish[] } | null> {
  await jetstreamAlertCursorInit(db, subject);
  const cur = await db.query<{ last: string }>(
    'select last_outbound_id::text as last from relay.jetstream_alert_cursor where subject = $1 for update skip locked',
    [subject],
  );
  if (cur.rows.length === 0) return null;
  const after = cur.rows[0].last;
  const { rows } = await db.query<AlertDbRow>(
    `select a.id::text as id, a.msg_id, a.bot_id, a.chat_id, a.text, a.created_at,
            f.id::text as f_id, f.msg_id as f_msg_id, f.chat_id as f_chat_id, f.target_chat_id as f_target, f.publisher_kind as f_pkind,
            f.attempts as f_attempts, f.last_status as f_status, coalesce(f.failed_reason, f.last_error) as f_reason, f.updated_at as f_at
       from relay.outbound a
       left join relay.outbound f on f.msg_id = substr(a.msg_id, 7) and a.msg_id like 'alert:%'
      where a.kind = 'alert' and a.id > $1::bigint
      order by a.id
      limit $2`,
    [after, limit],
  );
  return {
    after,
    alerts: rows.map((r) => ({
      id: r.id,
      msgId: r.msg_id,
      botId: r.bot_id,
      chatId: r.chat_id,
      text: r.text,
      createdAt: r.created_at,
      failed: r.f_id
        ? {
            id: r.f_id,
            msgId: r.f_msg_id,
            chatId: r.f_chat_id,
            targetChatId: r.f_target,
            publisherKind: r.f_pkind,
            attempts: Number(r.f_attempts),
            lastStatus: r.f_status === null ? null : Number(r.f_status),
            reason: r.f_reason,
            failedAt: r.f_at,
          }
        : null,
    })),
  };
}

export async function jetstreamAlertAdvance(db: Queryable, subject: string, lastId: string): Promise<void> {
  await db.query(
    'update relay.jetstream_alert_cursor set last_outbound_id = $2::bigint, updated_at = now() where subject = $1',
    [subject, lastId],
  );
}
