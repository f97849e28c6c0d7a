/** Shared pieces of the ingress integration tests: sandbox, unique bots, in-process pollers, log capture, DB probes. */
import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Pool } from 'pg';
import { createBoss } from '../../libs/db';
import { createPoller, Poller, PollerOptions } from '../../libs/ingress/poller';
import type { PersistOptions } from '../../libs/ingress/persist-batch';
import { cursorAcquire, cursorEnsure, cursorRead, type Fence } from '../../libs/ingress/queries';
import type { Logger } from '../../libs/observability/logger';
import { BotApiSandbox, BotApiSandboxOptions, createBotApiSandbox } from '../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../libs/telegram';

export async function startSandbox(opts: BotApiSandboxOptions = {}): Promise<BotApiSandbox> {
  const sb = createBotApiSandbox({ seed: 7, ...opts });
  await sb.start();
  return sb;
}

/** A token for a bot no other test uses (bot ids are random 9-digit numbers). */
export function newBotToken(): { token: string; botId: string } {
  const botId = String(100_000_000 + crypto.randomInt(800_000_000));
  return { token: `${botId}:test-${crypto.randomBytes(12).toString('hex')}`, botId };
}

/** A pino JSON log line: the fields tests read, the rest as parsed. */
export interface LogLine {
  [field: string]: unknown;
  level: number;
  msg?: string;
}

/** A pino logger whose JSON lines are kept for assertions. */
export function memoryLogger(level = 'debug'): { logger: Logger; lines: () => LogLine[]; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level }, stream);
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  return { logger, lines, text: () => chunks.join('') };
}

export interface TestPoller {
  poller: Poller;
  api: BotApiClient;
  logs: ReturnType<typeof memoryLogger>;
  owner: string;
  stop(): Promise<void>;
}

/** A poller in this process (fast paths); crash tests use real processes instead. */
export function startTestPoller(
  o: { pool: Pool; url: string; apiRoot: string; token: string; botId: string } & Partial<
    Omit<PollerOptions, 'pool' | 'boss' | 'api' | 'botId'>
  >,
): TestPoller {
  const logs = memoryLogger();
  const api = createBotApiClient({ token: o.token, apiRoot: o.apiRoot });
  const boss = createBoss(o.url, { max: 1 });
  const owner = o.owner ?? `test-${crypto.randomBytes(3).toString('hex')}`;
  const poller = createPoller({
    pool: o.pool,
    boss,
    api,
    botId: o.botId,
    owner,
    logger: o.logger ?? logs.logger,
    leaseTtlMs: o.leaseTtlMs ?? 2_000,
    pollTimeoutMs: o.pollTimeoutMs ?? 1_000,
    decodePolicy: o.decodePolicy ?? 'stop',
    allowedChatIds: o.allowedChatIds ?? [],
    dispatchUnauthorized: o.dispatchUnauthorized,
    backoff: o.backoff ?? { baseMs: 50, capMs: 400 },
    deleteWebhookOnAcquire: o.deleteWebhookOnAcquire,
  });
  poller.start();
  return {
    poller,
    api,
    logs,
    owner,
    stop: async () => {
      await poller.stop();
      api.close();
    },
  };
}

export async function cursorOf(pool: Pool, botId: string) {
  return cursorRead(pool, botId);
}

export async function inboxUpdateIds(pool: Pool, botId: string): Promise<number[]> {
  const { rows } = await pool.query('select update_id from relay.inbox where bot_id = $1 order by update_id', [botId]);
  return rows.map((r) => Number(r.update_id));
}

export async function inboxCount(pool: Pool, botId: string): Promise<number> {
  const { rows } = await pool.query('select count(*)::int as n from relay.inbox where bot_id = $1', [botId]);
  return rows[0].n;
}

/** pg-boss jobs referenced by this bot's rows, by queue (jobs are created only with their row). */
export async function jobCounts(pool: Pool, botId: string): Promise<{ dispatch: number; capture: number }> {
  const { rows } = await pool.query(
    `select (select count(*) from tg_relay_boss.job j join relay.inbox i on i.job_id = j.id where i.bot_id = $1 and j.name = 'update.dispatch')::int as dispatch,
            (select count(*) from tg_relay_boss.job j join relay.captures c on c.job_id = j.id where c.bot_id = $1 and j.name = 'capture.deliver')::int as capture`,
    [botId],
  );
  return rows[0];
}

export function range(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

/** Takes the lease of `botId` for `owner` (the cursor row made if absent); its fence. */
export async function acquireLease(pool: Pool, botId: string, owner = 'owner-a', ttlMs = 60_000): Promise<Fence> {
  await cursorEnsure(pool, botId);
  const got = await cursorAcquire(pool, botId, owner, ttlMs);
  if (!got) throw new Error('lease not acquired');
  return { owner, generation: got.generation };
}

/** persistBatch's options for a test batch: every chat allowed, no halt, a 60 s lease. */
export function persistOptions(botId: string, fence: Fence, o: Partial<PersistOptions> = {}): PersistOptions {
  return { botId, fence, leaseTtlMs: 60_000, allowedChatIds: new Set(), dispatchUnauthorized: false, halt: null, ...o };
}
