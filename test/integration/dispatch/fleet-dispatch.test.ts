/**
 * A worker without TELEGRAM_BOT_TOKEN dispatches every registered bot's updates to that bot's own
 * handlers, and shares its claims between the bots: a noisy bot's backlog does not hold back the
 * others. Real fleet poller and worker runtime in this process, the Bot API sandbox, PostgreSQL.
 */
import { loadConfig } from '../../../libs/config';
import { startFleetIngress, type FleetRuntime } from '../../../libs/ingress/fleet-runtime';
import { startWorkerRuntime, type WorkerRuntime } from '../../../libs/runtime/worker';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, registerBots, storedPerBot, type FleetBot } from '../../support/fleet-bots';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let fleet: FleetRuntime | undefined;
let worker: WorkerRuntime | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('dispatch_fleet');
  sandbox = await startSandbox({ limits: { enabled: false } });
});
afterEach(async () => {
  await worker?.stop(2_000);
  await fleet?.stop();
  await db.pool.query('update relay.bots set enabled = false');
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

const NOISY_CHATS = 100;
const NOISY_PER_CHAT = 6;

const handled = async (botId: string): Promise<number> =>
  (
    await db.pool.query<{ n: number }>(
      `select count(*)::int as n from relay.inbox where bot_id = $1 and state = 'handled'`,
      [botId],
    )
  ).rows[0].n;

it.each(['direct', 'outbound'] as const)(
  'REPLY_MODE=%s: quiet bots are answered by their own bots while a noisy bot drains its backlog',
  async (replyMode) => {
    const logs = memoryLogger('info');
    const [noisy, ...quiet] = await registerBots(db.pool, 6, { handlers: 'test/fixtures/text-reply-bot.ts' });
    // its own send rate, over the configuration's 30/s (a bot's settings)
    await db.pool.query(`update relay.bots set settings = '{"OUTBOUND_RATE_PER_BOT": "300/1s"}' where id = $1`, [
      noisy.botId,
    ]);
    const config = loadConfig({
      DATABASE_URL: db.url,
      TELEGRAM_API_ROOT: sandbox.url,
      TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
      REPLY_MODE: replyMode,
      WORKER_CONCURRENCY: '8',
      WORKER_BOT_CONCURRENCY: '2',
      LEASE_TTL: '2s',
      POLL_TIMEOUT: '1s',
      SHUTDOWN_TIMEOUT: '2s',
    });
    // the backlog is stored before any worker runs: it is all due, and older than the quiet bots' updates
    fleet = await startFleetIngress({ config, databaseUrl: db.url, logger: logs.logger });
    sandbox.injectMessages(noisy.token, NOISY_CHATS * NOISY_PER_CHAT, { chats: NOISY_CHATS, textPrefix: 'busy ' });
    const backlog = NOISY_CHATS * NOISY_PER_CHAT;
    await waitFor(async () => (await storedPerBot(db.pool, [noisy.botId])).get(noisy.botId)!.rows === backlog, {
      timeoutMs: 30_000,
      what: 'the noisy backlog stored',
    });

    worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger: logs.logger });
    await waitFor(async () => (await handled(noisy.botId)) > 0, { what: 'the backlog started' });
    for (const [i, q] of quiet.entries()) sandbox.injectMessage(q.token, { chatId: 900 + i, text: 'hi' });
    const answered = (q: FleetBot) => sandbox.sent(q.token).length > 0;
    await waitFor(() => quiet.every(answered), { timeoutMs: 30_000, what: 'every quiet bot answered' });
    // answered in the middle of the backlog, not after it
    expect(await handled(noisy.botId)).toBeLessThan(backlog);
    for (const [i, q] of quiet.entries()) {
      const sent = sandbox.sent(q.token);
      expect(sent.map((s) => [s.chat_id, s.text])).toEqual([[900 + i, 'ok']]);
    }

    await waitFor(async () => (await handled(noisy.botId)) === backlog, {
      timeoutMs: 120_000,
      what: 'backlog drained',
    });
    await waitFor(() => sandbox.sent(noisy.token).length >= backlog, { timeoutMs: 120_000, what: 'every reply sent' });
    expect(sandbox.sent(noisy.token)).toHaveLength(backlog);
    for (const b of [noisy, ...quiet]) expect(logs.text()).not.toContain(b.token);
    if (replyMode === 'outbound') {
      // relayed replies are rows of their own bot, each sent once with that bot's token (the last
      // sends' outcomes may still be committing when the Bot API has seen them)
      const deliveredByBot = async () => {
        const { rows } = await db.pool.query<{ bot_id: string; n: number }>(
          `select bot_id, count(*)::int as n from relay.outbound where state = 'delivered' group by bot_id`,
        );
        return new Map(rows.map((r) => [r.bot_id, r.n]));
      };
      await waitFor(async () => (await deliveredByBot()).get(noisy.botId) === backlog, {
        timeoutMs: 30_000,
        what: 'every noisy row delivered',
      });
      expect(await deliveredByBot()).toEqual(
        new Map([[noisy.botId, backlog], ...quiet.map((q) => [q.botId, 1] as const)]),
      );
    }
  },
);
