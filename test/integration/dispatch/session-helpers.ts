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
import { BOT_ID, TEST_DISPATCH_ENGINE, testLogger, TOKEN, type DispatchHarness } from './helpers';

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
    outboundWriter: mode === 'outbound' ? createOutboundReplyWriter({ boss, defaults: { botId: BOT_ID } }) : undefined,
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
