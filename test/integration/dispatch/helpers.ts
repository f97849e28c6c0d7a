/** Shared set-up of the dispatch integration tests: inbox rows as ingress stores them, and a dispatch worker. */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, Pool, QUEUES, withTransaction } from '../../../libs/db';
import {
  chatIdOf,
  createDirectReplySink,
  createDispatchKind,
  createUpdateRunner,
  resolveBotHandlers,
  type DispatchOrdering,
  type RegisterHandlers,
  type UpdateRunner,
} from '../../../libs/dispatch';
import { createLogger } from '../../../libs/observability/logger';
import { createWorker, enqueueJobs, newJobId, type EngineConfig, type Worker } from '../../../libs/queue';

export const TOKEN = '3000000001:dispatch-integration-token';
export const BOT_ID = '3000000001';

export function testLogger() {
  return createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

const updateType = (u: Record<string, unknown>) => Object.keys(u).find((k) => k !== 'update_id') ?? 'unknown';

/** Stores updates the way ingress does: a pending inbox row and its update.dispatch job, in one transaction. */
export async function storeUpdates(
  pool: Pool,
  boss: BossLedger,
  updates: Array<Record<string, unknown> & { update_id: number }>,
  botId = BOT_ID,
): Promise<string[]> {
  return withTransaction(pool, async (client) => {
    const jobIds = updates.map(() => newJobId());
    const { rows } = await client.query(
      `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, job_id)
       select $1, x.update_id, x.update_type, x.chat_id, x.payload, 'pending', x.job_id
         from jsonb_to_recordset($2::jsonb) as x(update_id bigint, update_type text, chat_id bigint, payload jsonb, job_id uuid)
       returning id::text`,
      [
        botId,
        JSON.stringify(
          updates.map((u, i) => ({
            update_id: u.update_id,
            update_type: updateType(u),
            chat_id: chatIdOf(u),
            payload: u,
            job_id: jobIds[i],
          })),
        ),
      ],
    );
    await enqueueJobs(
      client,
      boss,
      QUEUES.dispatch,
      rows.map((r, i) => ({ id: jobIds[i], data: { id: Number(r.id) } })),
    );
    return rows.map((r) => r.id as string);
  });
}

/** A message update without going through the sandbox (ordering tests need no Bot API calls). */
export function makeUpdate(
  updateId: number,
  chatId: number | null,
  text = `u${updateId}`,
): Record<string, unknown> & { update_id: number } {
  if (chatId === null)
    return {
      update_id: updateId,
      poll: {
        id: String(updateId),
        question: text,
        options: [],
        total_voter_count: 0,
        is_closed: false,
        is_anonymous: true,
        type: 'regular',
        allows_multiple_answers: false,
      },
    };
  return {
    update_id: updateId,
    message: {
      message_id: updateId,
      date: 1_700_000_000,
      chat: { id: chatId, type: 'private', first_name: 'U' },
      from: { id: chatId, is_bot: false, first_name: 'U' },
      text,
    },
  };
}

export const TEST_DISPATCH_ENGINE: EngineConfig = {
  concurrency: 8,
  staleAfterMs: 30_000,
  retry: { baseMs: 20, capMs: 100, maxAttempts: 3 },
};

export interface DispatchHarness {
  worker: Worker;
  runner: UpdateRunner;
  boss: BossLedger;
  stop(): Promise<void>;
}

/** An in-process engine running only update.dispatch with the given handlers against `apiRoot`. */
export async function startDispatchWorker(opts: {
  url: string;
  pool: Pool;
  apiRoot: string;
  register: RegisterHandlers;
  handlerTimeoutMs?: number;
  ordering?: DispatchOrdering;
  config?: Partial<EngineConfig>;
}): Promise<DispatchHarness> {
  const boss = createBoss(opts.url, { max: 1 });
  const logger = testLogger();
  const runner = createUpdateRunner({
    token: TOKEN,
    botId: BOT_ID,
    apiRoot: opts.apiRoot,
    handlers: resolveBotHandlers({ register: opts.register }),
    replySink: createDirectReplySink(),
    logger,
  });
  await runner.start();
  const worker = createWorker({
    pool: opts.pool,
    boss,
    logger,
    databaseUrl: opts.url,
    kinds: [createDispatchKind({ runner, handlerTimeoutMs: opts.handlerTimeoutMs ?? 5_000, ordering: opts.ordering })],
    config: {
      ...TEST_DISPATCH_ENGINE,
      ...opts.config,
      retry: { ...TEST_DISPATCH_ENGINE.retry, ...opts.config?.retry },
    },
  });
  await worker.start();
  return {
    worker,
    runner,
    boss,
    stop: async () => {
      await worker.stop({ timeoutMs: 2_000 });
    },
  };
}

export interface InboxRow {
  id: string;
  update_id: string;
  chat_id: string | null;
  state: 'pending' | 'handled' | 'failed';
  attempts: number;
  last_error: string | null;
  claim_id: string | null;
  handled_at: Date | null;
  next_attempt_at: Date;
  job_state: string | null;
}

export async function inboxRows(pool: Pool): Promise<InboxRow[]> {
  const { rows } = await pool.query(
    `select i.id::text, i.update_id::text, i.chat_id::text, i.state, i.attempts, i.last_error, i.claim_id, i.handled_at, i.next_attempt_at,
            j.state as job_state
       from relay.inbox i left join tg_relay_boss.job j on j.id = i.job_id and j.name = 'update.dispatch'
      order by i.update_id`,
  );
  return rows as InboxRow[];
}

export async function attemptsOf(pool: Pool, inboxId: string) {
  const { rows } = await pool.query(
    `select attempt, outcome, error_code, error, duration_ms, worker_id, details from relay.attempts
      where subject = 'inbox' and subject_id = $1 order by id`,
    [inboxId],
  );
  return rows;
}
