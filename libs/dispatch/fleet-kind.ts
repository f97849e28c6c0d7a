/**
 * update.dispatch for a worker without TELEGRAM_BOT_TOKEN: every enabled registered bot that names
 * a handlers module, each on its own Telegraf (loaded, installed and introduced with getMe on its
 * first update) with its own token, so sessions, replies and rate limits stay the bot's own.
 *
 * Fairness: one claim is shared between the bots (the engine's `fairBy`): bots are taken in turn,
 * the first one rotating claim by claim, and none gets more than WORKER_BOT_CONCURRENCY updates in
 * flight in this process. A bot with a long backlog or a slow handler fills its own slots only; the
 * other bots' updates are claimed in the same round.
 */
import type { Pool } from 'pg';
import type { BotWatch, ServedBot } from '../bots/watch';
import { configSchema } from '../config/schema';
import { QUEUES } from '../db/boss';
import { errorMessage } from '../errors';
import type { Logger } from '../observability/logger';
import { createOutboundReplyWriter } from '../outbound/replies';
import type { Param } from '../queue/claim-sql';
import { createFairClaims } from '../queue/fair-claims';
import type { JobKind } from '../queue/job-kind';
import { Outcome } from '../queue/outcome';
import { createInboxClaimStore, dispatchUpdate, type CommitEffect, type DispatchOrdering } from './dispatch-kind';
import { loadBotHandlers } from './handlers-module';
import type { InboxClaimedRow } from './queries';
import { createReplySink, type ReplyMode } from './reply-sink';
import { createUpdateRunner, type UpdateRunner } from './update-runner';

export interface FleetDispatchOptions {
  bots: BotWatch;
  pool: Pool;
  logger: Logger;
  apiRoot: string;
  /** HANDLER_TIMEOUT, unless a bot's settings say otherwise. */
  handlerTimeoutMs: number;
  ordering: DispatchOrdering;
  replyMode: ReplyMode;
  sessionTtlMs: number;
  maxUploadBytes: number;
  /** WORKER_BOT_CONCURRENCY: updates of one bot in flight in this process at most. */
  perBotConcurrency: number;
  /** Where relative handlers paths are resolved (default the process's working directory). */
  cwd?: string;
}

interface BotRunner {
  version: string;
  runner: Promise<UpdateRunner>;
  abort: AbortController;
}

export function createFleetDispatchKind(opts: FleetDispatchOptions): JobKind<InboxClaimedRow, CommitEffect> {
  const logger = opts.logger.child({ component: 'dispatch' });
  const runners = new Map<string, BotRunner>();
  const dispatchable = (): ServedBot[] => [...opts.bots.bots().values()].filter((b) => b.handlers);
  const fair = createFairClaims({ keys: () => dispatchable().map((b) => b.id), perKey: opts.perBotConcurrency });
  const store = fair.count(
    createInboxClaimStore({
      ordered: opts.ordering === 'chat',
      fleet: {
        // the next-due query's bots: all served ones (a bot at its cap still has work due)
        scope: (p: Param) => `c.bot_id = any(${p(() => dispatchable().map((b) => b.id))}::text[])`,
        fairBy: fair.fairBy('bot_id'),
      },
    }),
    (row) => row.bot_id,
  );

  const build = async (bot: ServedBot, signal: AbortSignal): Promise<UpdateRunner> => {
    const handlers = await loadBotHandlers(bot.handlers as string, opts.cwd);
    const replySink = createReplySink(opts.replyMode, {
      outboundWriter:
        opts.replyMode === 'outbound' ? createOutboundReplyWriter({ defaults: { botId: bot.id } }) : undefined,
      maxUploadBytes: opts.maxUploadBytes,
    });
    const runner = createUpdateRunner({
      token: bot.token,
      botId: bot.id,
      apiRoot: opts.apiRoot,
      handlers,
      replySink,
      logger: logger.child({ botId: bot.id }),
      pool: opts.pool,
      sessionTtlMs: opts.sessionTtlMs,
    });
    await runner.install();
    await runner.start({ signal });
    logger.info({ botId: bot.id, handlers: handlers.file, shape: handlers.shape }, 'bot handlers loaded');
    return runner;
  };

  /** The bot's runner, built on first use and again when its registration changed; a failed build is retried later. */
  const runnerOf = (bot: ServedBot): Promise<UpdateRunner> => {
    let r = runners.get(bot.id);
    if (r && r.version !== bot.version) {
      r.abort.abort();
      r = undefined;
    }
    if (!r) {
      const abort = new AbortController();
      const built: BotRunner = { version: bot.version, abort, runner: build(bot, abort.signal) };
      built.runner.catch(() => runners.get(bot.id) === built && runners.delete(bot.id));
      runners.set(bot.id, (r = built));
    }
    return r.runner;
  };

  const timeoutOf = (bot: ServedBot): number => {
    const own = bot.settings.HANDLER_TIMEOUT;
    const parsed = own === undefined ? undefined : configSchema.shape.HANDLER_TIMEOUT.safeParse(own);
    return parsed?.success ? parsed.data : opts.handlerTimeoutMs;
  };

  return {
    queue: QUEUES.dispatch,
    store,
    async execute(job, ctx) {
      const botId = job.row.bot_id;
      try {
        const bot = opts.bots.bots().get(botId);
        // disabled or removed since the claim: the update waits for it, as unclaimed ones do
        if (!bot?.handlers)
          return Outcome.retry(undefined, {
            errorCode: 'RELAY_BOT_NOT_SERVED',
            error: `bot ${botId} is not served (disabled, removed, or without handlers)`,
          });
        let runner: UpdateRunner;
        try {
          runner = await runnerOf(bot);
        } catch (err) {
          const message = errorMessage(err) ?? String(err);
          ctx.logger.warn({ botId, err: { message } }, 'bot handlers could not start; the update is retried');
          return Outcome.retry(undefined, { errorCode: 'RELAY_BOT_HANDLERS', error: message });
        }
        return await dispatchUpdate(runner, timeoutOf(bot), job, ctx);
      } finally {
        fair.finished(botId);
      }
    },
    close() {
      for (const r of runners.values()) r.abort.abort();
      runners.clear();
    },
  };
}
