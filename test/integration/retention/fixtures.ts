/**
 * Rows of every class in any state and age, written directly (as the components leave them), each
 * with two relay.attempts rows and — for tables with jobs — its pg-boss job in the mirroring state
 * plus, optionally, an archived copy. `expectedVictims` is the model prune is checked against.
 */
import crypto from 'node:crypto';
import type { Pool } from 'pg';
import { BOSS_SCHEMA, QUEUES } from '../../../libs/db';

export type Kind = 'captures' | 'outbound' | 'inbox' | 'quarantine' | 'audit';
export const STATES: Record<Kind, string[]> = {
  captures: ['pending', 'delivering', 'delivered', 'failed'],
  outbound: ['pending', 'delivering', 'delivered', 'failed'],
  inbox: ['pending', 'claimed', 'handled', 'failed'],
  quarantine: ['quarantined', 'released', 'discarded'],
  audit: ['admin', 'cursor'],
};
const QUEUE: Record<string, string> = { captures: QUEUES.capture, outbound: QUEUES.outbound, inbox: QUEUES.dispatch };
const SUBJECT: Record<string, string> = {
  captures: 'capture',
  outbound: 'outbound',
  inbox: 'inbox',
  quarantine: 'quarantine',
};
const JOB_STATE: Record<string, string> = {
  pending: 'created',
  claimed: 'active',
  delivering: 'active',
  delivered: 'completed',
  handled: 'completed',
  failed: 'failed',
};

export interface Seed {
  kind: Kind;
  state: string;
  /** Age of the row's terminal (or creation) time, in hours before `now`. */
  ageHours: number;
  archived?: boolean;
}

export interface Seeded extends Seed {
  id: string;
  jobId: string | null;
}

let n = 0;

/** Inserts the rows; times are `now - ageHours` by the database clock (or `now` when given). */
export async function seed(pool: Pool, seeds: Seed[], now: Date | null = null): Promise<Seeded[]> {
  const out: Seeded[] = [];
  for (const s of seeds) {
    n++;
    const at = `(coalesce($1::timestamptz, now()) - $2::float8 * interval '1 hour')`;
    const job = s.kind in QUEUE ? crypto.randomUUID() : null;
    let id: string;
    if (s.kind === 'captures') {
      const { rows } = await pool.query(
        `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, text, payload, payload_sha256, state, job_id,
                                     created_at, updated_at, delivered_at, started_at, claim_id, worker_id)
         values ($3, '1', $4, 42, $4, 'secret text', '{}', 'x', $5, $6, ${at}, ${at}, case when $5 = 'delivered' then ${at} end,
                 case when $5 = 'delivering' then ${at} end, case when $5 = 'delivering' then gen_random_uuid() end, case when $5 = 'delivering' then 'w' end)
         returning id::text`,
        [now, s.ageHours, `telegram:${n}:42:${n}:${crypto.randomUUID()}`, n, s.state, job],
      );
      id = rows[0].id;
    } else if (s.kind === 'outbound') {
      const { rows } = await pool.query(
        `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, state, job_id, created_at, updated_at, delivered_at, started_at, claim_id)
         values ($3, '1', '42', '42', 'secret', 'x', $4, $5, ${at}, ${at}, case when $4 = 'delivered' then ${at} end,
                 case when $4 = 'delivering' then ${at} end, case when $4 = 'delivering' then gen_random_uuid() end)
         returning id::text`,
        [now, s.ageHours, `m:${crypto.randomUUID()}`, s.state, job],
      );
      id = rows[0].id;
    } else if (s.kind === 'inbox') {
      const state = s.state === 'claimed' ? 'pending' : s.state;
      const { rows } = await pool.query(
        `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, job_id, received_at, updated_at, handled_at, claim_id, started_at, worker_id)
         values ('1', $3, 'message', 42, '{"message":{"text":"secret"}}', $4, $5, ${at}, ${at}, case when $4 = 'handled' then ${at} end,
                 case when $6 then gen_random_uuid() end, case when $6 then ${at} end, case when $6 then 'w' end)
         returning id::text`,
        [now, s.ageHours, 1_000_000 + n, state, job, s.state === 'claimed'],
      );
      id = rows[0].id;
    } else if (s.kind === 'quarantine') {
      const { rows } = await pool.query(
        `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, state, created_at, resolved_at)
         values ('1', $3, '\\x7b7d', $4, 'bad', $5, ${at}, case when $5 <> 'quarantined' then ${at} end)
         returning id::text`,
        [now, s.ageHours, 2_000_000 + n, `sha${n}`, s.state],
      );
      id = rows[0].id;
    } else {
      const { rows } = await pool.query(
        `insert into relay.attempts (subject, subject_key, started_at, outcome, actor) values ($3, 'k', ${at}, $4, 'admin') returning id::text`,
        [now, s.ageHours, s.state, s.state === 'admin' ? 'admin.retry' : 'lease_acquired'],
      );
      out.push({ ...s, id: rows[0].id, jobId: null });
      continue;
    }
    // two attempts per item, as its history
    await pool.query(
      `insert into relay.attempts (subject, subject_id, subject_key, attempt, started_at, outcome)
       select $1, $2, 'k', g, coalesce($3::timestamptz, now()) - $4::float8 * interval '1 hour', 'retry' from generate_series(1, 2) g`,
      [SUBJECT[s.kind], id, now, s.ageHours],
    );
    if (job) {
      await pool.query(
        `insert into ${BOSS_SCHEMA}.job (id, name, data, state, retry_limit, created_on, completed_on)
         values ($1, $2, jsonb_build_object('id', $3::text), $4::${BOSS_SCHEMA}.job_state, 0, now(), case when $4 in ('completed', 'failed') then now() end)`,
        [job, QUEUE[s.kind], id, JOB_STATE[s.state]],
      );
      if (s.archived) {
        await pool.query(
          `insert into ${BOSS_SCHEMA}.archive select * from ${BOSS_SCHEMA}.job where name = $1 and id = $2`,
          [QUEUE[s.kind], job],
        );
      }
    }
    out.push({ ...s, id, jobId: job });
  }
  return out;
}

const TERMINAL_FINISHED: Partial<Record<Kind, string[]>> = {
  captures: ['delivered'],
  outbound: ['delivered'],
  inbox: ['handled'],
};
const TERMINAL_FAILED: Partial<Record<Kind, string[]>> = {
  captures: ['failed'],
  outbound: ['failed'],
  inbox: ['failed'],
  quarantine: ['released', 'discarded'],
  audit: ['admin', 'cursor'],
};

/** The model: is this row past its class's retention? (Retentions in hours; null = off.) */
export function isVictim(s: Seed, retentionH: number | null, failedH: number | null): boolean {
  if (retentionH !== null && TERMINAL_FINISHED[s.kind]?.includes(s.state) && s.ageHours > retentionH) return true;
  if (failedH !== null && TERMINAL_FAILED[s.kind]?.includes(s.state) && s.ageHours > failedH) return true;
  return false;
}

/** What remains of the seeded rows, per kind: ids of items, attempts per item, jobs and archived jobs. */
export async function survivors(
  pool: Pool,
): Promise<{ items: Set<string>; attemptsOf: Map<string, number>; jobs: Set<string>; archived: Set<string> }> {
  const items = new Set<string>();
  for (const t of ['captures', 'outbound', 'inbox', 'quarantine']) {
    const { rows } = await pool.query(`select id::text from relay.${t}`);
    for (const r of rows) items.add(`${t}:${r.id}`);
  }
  const { rows: audit } = await pool.query(
    `select id::text, subject from relay.attempts where subject in ('admin', 'cursor')`,
  );
  for (const r of audit) items.add(`audit:${r.id}`);
  const attemptsOf = new Map<string, number>();
  const { rows: att } = await pool.query(
    `select subject, subject_id::text as id, count(*)::int as n from relay.attempts where subject_id is not null group by 1, 2`,
  );
  const T: Record<string, string> = {
    capture: 'captures',
    outbound: 'outbound',
    inbox: 'inbox',
    quarantine: 'quarantine',
  };
  for (const r of att) attemptsOf.set(`${T[r.subject]}:${r.id}`, r.n);
  const { rows: jobs } = await pool.query(
    `select id::text from ${BOSS_SCHEMA}.job where name in ($1, $2, $3)`,
    Object.values(QUEUE),
  );
  const { rows: arch } = await pool.query(
    `select id::text from ${BOSS_SCHEMA}.archive where name in ($1, $2, $3)`,
    Object.values(QUEUE),
  );
  return { items, attemptsOf, jobs: new Set(jobs.map((r) => r.id)), archived: new Set(arch.map((r) => r.id)) };
}

export async function wipe(pool: Pool): Promise<void> {
  await pool.query(
    `truncate relay.captures, relay.outbound_uploads, relay.outbound, relay.inbox, relay.quarantine, relay.attempts, relay.superseded_jobs, relay.prune_runs`,
  );
  await pool.query(`delete from ${BOSS_SCHEMA}.job where name in ($1, $2, $3)`, Object.values(QUEUE));
  await pool.query(`delete from ${BOSS_SCHEMA}.archive where name in ($1, $2, $3)`, Object.values(QUEUE));
}

export const itemKey = (s: Seeded) => `${s.kind}:${s.id}`;
