/**
 * The update.dispatch kind as `tg-relay worker` (and `start`) run it, composed from configuration:
 * BOT_HANDLERS loaded and installed on one Telegraf for TELEGRAM_BOT_TOKEN at TELEGRAM_API_ROOT,
 * the reply sink of REPLY_MODE, HANDLER_TIMEOUT and DISPATCH_ORDERING. getMe runs in the
 * background (retried while the Bot API is unreachable); dispatch claims nothing until it answered.
 */
import type { Pool } from 'pg';
import { botIdFromToken, ConfigError, type Config } from '../config';
import type { Logger } from '../observability/logger';
import { createOutboundReplyWriter } from '../outbound/replies';
import { createDispatchKind, type CommitEffect, type SendReplies } from './dispatch-kind';
import { loadBotHandlers } from './handlers-module';
import { createReplySink } from './reply-sink';
import { createUpdateRunner, type UpdateRunner } from './update-runner';
import type { JobKind } from '../queue/job-kind';
import type { InboxClaimedRow } from './queries';
import { errorMessage } from '../errors';

export async function createDispatchKindFromConfig(
  config: Pick<
    Config,
    | 'BOT_HANDLERS'
    | 'TELEGRAM_BOT_TOKEN'
    | 'TELEGRAM_API_ROOT'
    | 'HANDLER_TIMEOUT'
    | 'REPLY_MODE'
    | 'DISPATCH_ORDERING'
    | 'SESSION_TTL'
    | 'OUTBOUND_MAX_UPLOAD'
  >,
  /** `pool`: the worker's, for sessions and handlers' own transactions. */
  deps: { logger: Logger; cwd?: string; pool?: Pool; sendReplies?: SendReplies },
): Promise<JobKind<InboxClaimedRow, CommitEffect> & { runner: UpdateRunner }> {
  if (!config.BOT_HANDLERS)
    throw new ConfigError('BOT_HANDLERS is not set', [
      { variable: 'BOT_HANDLERS', problem: 'required for update dispatch' },
    ]);
  const token = config.TELEGRAM_BOT_TOKEN;
  if (!token) {
    throw new ConfigError(
      'invalid configuration:\n  TELEGRAM_BOT_TOKEN: required with BOT_HANDLERS (the bot whose updates are dispatched)',
      [{ variable: 'TELEGRAM_BOT_TOKEN', problem: 'required with BOT_HANDLERS' }],
    );
  }
  const logger = deps.logger.child({ component: 'dispatch' });
  const botId = botIdFromToken(token);
  const handlers = await loadBotHandlers(config.BOT_HANDLERS, deps.cwd);
  const replySink = createReplySink(config.REPLY_MODE, {
    outboundWriter:
      config.REPLY_MODE === 'outbound'
        ? createOutboundReplyWriter({ defaults: { botId }, wake: !deps.sendReplies })
        : undefined,
    maxUploadBytes: config.OUTBOUND_MAX_UPLOAD,
  });
  const runner = createUpdateRunner({
    token,
    botId,
    apiRoot: config.TELEGRAM_API_ROOT,
    handlers,
    replySink,
    logger,
    pool: deps.pool,
    sessionTtlMs: config.SESSION_TTL,
  });
  await runner.install(); // a broken handlers module stops the worker at start, not at the first update
  const stop = new AbortController();
  const started = runner.start({ signal: stop.signal });
  started.catch((err) => {
    if (!stop.signal.aborted) logger.error({ err: { message: errorMessage(err) } }, 'dispatch could not start');
  });
  logger.info(
    {
      handlers: handlers.file,
      shape: handlers.shape,
      replyMode: replySink.mode,
      ordering: config.DISPATCH_ORDERING,
      handlerTimeoutMs: config.HANDLER_TIMEOUT,
    },
    'update dispatch enabled',
  );
  // dispatch claims from the moment getMe answers (a start that failed — aborted by close — never
  // makes it ready)
  const whenReady = started.then(
    () => undefined,
    () => new Promise<void>(() => undefined),
  );
  const kind = createDispatchKind({
    runner,
    handlerTimeoutMs: config.HANDLER_TIMEOUT,
    ordering: config.DISPATCH_ORDERING,
    whenReady,
    sendReplies: deps.sendReplies,
  });
  return { ...kind, runner, close: () => stop.abort() };
}
