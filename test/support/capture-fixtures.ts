/**
 * Captures as the poller enqueues them: the relay.captures row (with a pre-generated job id) and its
 * pg-boss `capture.deliver` job carrying `{ id }`, in one transaction, with the NOTIFY that wakes
 * workers. `makeCapture({ chatId })` builds one with overrides.
 */
import crypto from 'node:crypto';
import type { BossLedger } from '../../libs/db/boss';
import { Pool, QUEUES, withTransaction } from '../../libs/db';
import { enqueueJobs, newJobId } from '../../libs/queue/enqueue';

export interface CaptureFixture {
  updateId: number;
  chatId: number;
  messageId: number;
  fromId: number;
  text: string;
  date: number;
  maxAttempts?: number | null;
}

let seq = 1;

export function makeCapture(overrides: Partial<CaptureFixture> = {}): CaptureFixture {
  const n = seq++;
  return {
    updateId: 100_000 + n,
    chatId: 42,
    messageId: n,
    fromId: 7,
    text: `hello ${n}`,
    date: 1_700_000_000 + n,
    ...overrides,
  };
}

export const keyOf = (c: CaptureFixture) => `telegram:${c.updateId}:${c.chatId}:${c.messageId}`;

export interface InsertedCapture {
  id: string;
  key: string;
  jobId: string;
}

export async function insertCaptures(
  pool: Pool,
  boss: BossLedger,
  captures: CaptureFixture[] | number,
): Promise<InsertedCapture[]> {
  const list = typeof captures === 'number' ? Array.from({ length: captures }, () => makeCapture()) : captures;
  return withTransaction(pool, async (client) => {
    const docs = list.map((c) => {
      const key = keyOf(c);
      const message = {
        message_id: c.messageId,
        date: c.date,
        chat: { id: c.chatId, type: 'private' },
        from: { id: c.fromId, is_bot: false, first_name: 'T' },
        text: c.text,
      };
      const payload = {
        key,
        update_id: c.updateId,
        update_type: 'message',
        chat: message.chat,
        from: message.from,
        text: c.text,
        date: c.date,
        message,
      };
      const json = JSON.stringify(payload);
      return {
        capture_key: key,
        update_id: c.updateId,
        chat_id: c.chatId,
        message_id: c.messageId,
        from_id: c.fromId,
        text: c.text,
        message_date: c.date,
        payload,
        payload_sha256: crypto.createHash('sha256').update(json).digest('hex'),
        job_id: newJobId(),
        max_attempts: c.maxAttempts ?? null,
      };
    });
    const { rows } = await client.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_sha256, job_id, max_attempts)
       select capture_key, '1', update_id, chat_id, message_id, from_id, text, to_timestamp(message_date), payload, payload_sha256, job_id, max_attempts
         from jsonb_to_recordset($1::jsonb) as x(capture_key text, update_id bigint, chat_id bigint, message_id bigint, from_id bigint,
              text text, message_date bigint, payload jsonb, payload_sha256 text, job_id uuid, max_attempts integer)
       returning id::text, capture_key, job_id::text`,
      [JSON.stringify(docs)],
    );
    await enqueueJobs(
      client,
      boss,
      QUEUES.capture,
      rows.map((r) => ({ id: r.job_id, data: { id: r.id } })),
    );
    return rows.map((r) => ({ id: r.id, key: r.capture_key, jobId: r.job_id }));
  });
}

export interface CaptureState {
  id: string;
  key: string;
  state: string;
  attempts: number;
  jobId: string;
  jobState: string | null;
  nextAttemptAt: Date;
  jobStartAfter: Date | null;
  failedReason: string | null;
  lastStatus: number | null;
  workerId: string | null;
  claimId: string | null;
}

export async function captureStates(pool: Pool): Promise<CaptureState[]> {
  const { rows } = await pool.query(
    `select c.id::text, c.capture_key as key, c.state, c.attempts, c.job_id::text as "jobId", j.state::text as "jobState",
            c.next_attempt_at as "nextAttemptAt", j.start_after as "jobStartAfter", c.failed_reason as "failedReason",
            c.last_status as "lastStatus", c.worker_id as "workerId", c.claim_id::text as "claimId"
       from relay.captures c left join tg_relay_boss.job j on j.name = 'capture.deliver' and j.id = c.job_id
      order by c.id`,
  );
  return rows;
}

const MIRROR: Record<string, string[]> = {
  pending: ['created', 'retry'],
  delivering: ['active'],
  delivered: ['completed'],
  failed: ['failed'],
};

/** Rows whose pg-boss job is not in the state that mirrors theirs (should be none). */
export async function inconsistentCaptures(pool: Pool): Promise<CaptureState[]> {
  return (await captureStates(pool)).filter((c) => !c.jobState || !MIRROR[c.state].includes(c.jobState));
}

export async function countByState(pool: Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query(`select state, count(*)::int as n from relay.captures group by state`);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

export async function attemptsOf(pool: Pool, captureId: string) {
  const { rows } = await pool.query(
    `select attempt, worker_id, outcome, http_status, error_code, error, details, started_at, finished_at, duration_ms
       from relay.attempts where subject = 'capture' and subject_id = $1 order by id`,
    [captureId],
  );
  return rows;
}
