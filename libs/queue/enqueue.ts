import crypto from 'node:crypto';
import type PgBoss from 'pg-boss';
import type { PoolClient } from 'pg';
import { bossDb } from '../db/pool';
import type { QueueName } from '../db/boss';

/** Workers LISTEN on this channel; the payload is the queue name. Sent from the enqueueing transaction. */
export const WORK_CHANNEL = 'tg_relay_work';

export interface JobToEnqueue {
  /** Pre-generated so the domain row can store its job id in the same statement batch. */
  id?: string;
  data: Record<string, unknown>;
  startAfter?: Date;
}

export function newJobId(): string {
  return crypto.randomUUID();
}

/**
 * Creates pg-boss jobs inside the caller's transaction (one statement for the whole batch) and
 * notifies idle workers, who wake when the transaction commits (NOTIFY is transactional).
 * Returns the job ids in input order. Throws if pg-boss refused a job (it returns null silently).
 */
export async function enqueueJobs(client: PoolClient, boss: PgBoss, queue: QueueName, jobs: JobToEnqueue[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  const withIds = jobs.map((j) => ({ id: j.id ?? newJobId(), name: queue, data: j.data, startAfter: j.startAfter?.toISOString(), retryLimit: 0 }));
  // pg-boss 10.4's batch insert has no RETURNING clause: insert() resolves to null even on success.
  // Count the rows the INSERT reports instead (ON CONFLICT DO NOTHING, or an unknown queue, insert fewer).
  const db = bossDb(client);
  let inserted = 0;
  const counting = {
    executeSql: async (text: string, values?: unknown[]) => {
      const r = (await db.executeSql(text, values)) as { rows: unknown[]; rowCount?: number | null };
      inserted = r.rowCount ?? 0;
      return r;
    },
  };
  await (boss.insert as unknown as (j: unknown[], o: unknown) => Promise<unknown>)(withIds, { db: counting });
  if (inserted !== jobs.length) {
    throw Object.assign(new Error(`pg-boss did not create all ${jobs.length} ${queue} jobs (does the queue exist? run tg-relay migrate)`), {
      code: 'RELAY_ENQUEUE_FAILED',
    });
  }
  await client.query('select pg_notify($1, $2)', [WORK_CHANNEL, queue]);
  return withIds.map((j) => j.id);
}
