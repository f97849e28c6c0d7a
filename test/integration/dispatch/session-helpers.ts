/** Dispatch workers whose runner has the worker's pool (sessions, dispatch.transaction), in direct or outbound reply mode. */
import { createBoss, Pool } from '../../../libs/db';
import {
  createDispatchKind,
  createReplySink,
  createUpdateRunner,
  resolveBotHandlers,
  type RegisterHandlers,
  type ReplyMode,
} from '../../../libs/dispatch';
import { createOutboundReplyWriter } from '../../../libs/outbound/replies';
import { createWorker, type EngineConfig } from '../../../libs/queue';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { BOT_ID, inboxRows, TEST_DISPATCH_ENGINE, testLogger, TOKEN, type DispatchHarness } from './helpers';

export async function startSessionWorker(opts: {
  url: string;
  pool: Pool;
  apiRoot: string;
  register: RegisterHandlers;
  replyMode?: ReplyMode;
  handlerTimeoutMs?: number;
  sessionTtlMs?: number;
  config?: Partial<EngineConfig>;
}): Promise<DispatchHarness> {
  const boss = createBoss(opts.url, { max: 1 });
  const logger = testLogger();
  const mode = opts.replyMode ?? 'direct';
  const replySink = createReplySink(mode, {
    outboundWriter: mode === 'outbound' ? createOutboundReplyWriter({ defaults: { botId: BOT_ID } }) : undefined,
  });
  const runner = createUpdateRunner({
    token: TOKEN,
    botId: BOT_ID,
    apiRoot: opts.apiRoot,
    handlers: resolveBotHandlers({ register: opts.register }),
    replySink,
    logger,
    pool: opts.pool,
    sessionTtlMs: opts.sessionTtlMs,
  });
  await runner.start();
  const worker = createWorker({
    pool: opts.pool,
    boss,
    logger,
    databaseUrl: opts.url,
    kinds: [createDispatchKind({ runner, handlerTimeoutMs: opts.handlerTimeoutMs ?? 5_000 })],
    config: {
      ...TEST_DISPATCH_ENGINE,
      ...opts.config,
      retry: { ...TEST_DISPATCH_ENGINE.retry, ...opts.config?.retry },
    },
  });
  await worker.start();
  return { worker, runner, boss, stop: () => worker.stop({ timeoutMs: 2_000 }) };
}

type SessionWorkerOptions = Parameters<typeof startSessionWorker>[0];
type TestDatabase = Awaited<ReturnType<typeof createMigratedDatabase>>;

export interface SessionSuite {
  readonly db: TestDatabase;
  readonly sandbox: BotApiSandbox;
  /** A session worker on the suite's database and sandbox, stopped after the test. */
  readonly start: (register: RegisterHandlers, more?: Partial<SessionWorkerOptions>) => Promise<DispatchHarness>;
}

/**
 * The hooks a session test file shares: a migrated database and a Bot API sandbox for the file; after
 * each test its workers are stopped and the dispatch tables (and `truncate`, a test's own) emptied.
 * `setup` runs once the database exists; `defaults` apply to every `start`.
 */
export function sessionSuite(
  name: string,
  opts: {
    setup?: (db: TestDatabase) => Promise<void>;
    truncate?: string[];
    defaults?: Partial<SessionWorkerOptions>;
  } = {},
): SessionSuite {
  let db: TestDatabase | undefined;
  let sandbox: BotApiSandbox | undefined;
  const harnesses: DispatchHarness[] = [];
  beforeAll(async () => {
    db = await createMigratedDatabase(name);
    await opts.setup?.(db);
    sandbox = createBotApiSandbox({ limits: { enabled: false } });
    await sandbox.start();
  });
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.stop()));
    const tables = ['relay.inbox', 'relay.attempts', 'relay.sessions', 'relay.outbound', ...(opts.truncate ?? [])];
    await db!.pool.query(`truncate ${tables.join(', ')} cascade`);
  });
  afterAll(async () => {
    await sandbox?.stop();
    await db?.drop();
  });
  return {
    get db() {
      return db!;
    },
    get sandbox() {
      return sandbox!;
    },
    start: async (register, more = {}) => {
      const h = await startSessionWorker({
        url: db!.url,
        pool: db!.pool,
        apiRoot: sandbox!.url,
        register,
        ...opts.defaults,
        ...more,
      });
      harnesses.push(h);
      return h;
    },
  };
}

/** Waits until `n` updates are handled. */
export const allHandled = (pool: Pool, n: number, timeoutMs = 20_000) =>
  waitFor(async () => (await inboxRows(pool)).filter((r) => r.state === 'handled').length === n, {
    what: `${n} updates handled`,
    timeoutMs,
  });

export async function sessionValue(pool: Pool, key: string): Promise<unknown> {
  const { rows } = await pool.query(`select value from relay.sessions where key = $1`, [key]);
  return rows[0]?.value;
}

/** A text message from `fromId` in chat `chatId` (a group when they differ). */
export function messageFrom(updateId: number, chatId: number, fromId: number, text = `u${updateId}`) {
  return {
    update_id: updateId,
    message: {
      message_id: updateId,
      date: 1_700_000_000,
      chat:
        chatId === fromId
          ? { id: chatId, type: 'private', first_name: 'U' }
          : { id: chatId, type: 'group', title: 'G' },
      from: { id: fromId, is_bot: false, first_name: 'U' },
      text,
    },
  };
}

/** Resolves once `n` callers have arrived (or after `ms`, so that a test that would deadlock fails instead). */
export function barrier(n: number, ms = 3_000): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return async () => {
    if (++arrived >= n) open();
    await Promise.race([opened, new Promise((r) => setTimeout(r, ms))]);
  };
}
