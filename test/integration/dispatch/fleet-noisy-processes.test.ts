/**
 * A noisy bot cannot slow the others: real `tg-relay poller` and `tg-relay worker` processes
 * without a token serve 50 registered bots; one bot gets a 5,000-update backlog (its replies paced
 * by its own 30/s limit, so its rows wait in both queues for minutes), and while it drains, each of
 * the 49 quiet bots gets one message, answered by its own bot. Without the fair claim, the noisy
 * bot's thousands of due rows would fill every claim (they are older), and each quiet reply would
 * wait behind them; with it, a quiet reply overtakes them. That is asserted in rows, which no load
 * on the machine changes: each quiet reply went out while at least OVERTAKEN of the noisy rows
 * stored before its message were still waiting. How long the replies took is printed (about 1 s
 * on a quiet machine, the 2 s target); the figure under load is bench/fleet.ts's.
 */
import type { BotApiSandbox, CallRecord } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, registerBots } from '../../support/fleet-bots';
import { startSandbox } from '../../support/ingress-harness';
import { killHard, startFleetPollerProcess, type PollerProcess } from '../../support/ingress-processes';
import { startWorkerProcess } from '../../support/worker-process';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(180_000);

const BACKLOG = 5_000;
/**
 * Noisy rows a quiet reply must have overtaken: with the claim unshared (FIFO over every bot's
 * rows) each quiet reply overtook 3–64 and took 2 minutes; shared, more than 1,000 each.
 */
const OVERTAKEN = 500;

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const procs: PollerProcess[] = [];
/** When each (bot, chat) got its first reply, by the sandbox's clock. */
const repliedAt = new Map<string, number>();
const onCall = (r: CallRecord) => {
  if (r.method !== 'sendMessage' || r.status !== 200) return;
  const key = `${r.bot_id}:${String(r.params.chat_id)}`;
  if (!repliedAt.has(key)) repliedAt.set(key, Date.now());
};

beforeAll(async () => {
  db = await createMigratedDatabase('dispatch_fleet_noisy');
  sandbox = await startSandbox({ onCall });
});
afterAll(async () => {
  await Promise.all(procs.map(killHard));
  await sandbox.stop();
  await db.drop();
});

const count = async (sql: string, values: unknown[]) => (await db.pool.query<{ n: number }>(sql, values)).rows[0].n;

it(`49 quiet bots are each answered ahead of the older rows of a bot draining a ${BACKLOG}-update backlog`, async () => {
  const [noisy, ...quiet] = await registerBots(db.pool, 50, { handlers: 'test/fixtures/text-reply-bot.ts' });
  const env = { DATABASE_URL: db.url, TELEGRAM_API_ROOT: sandbox.url, TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX };
  procs.push(startWorkerProcess(env), startWorkerProcess(env));
  procs.push(startFleetPollerProcess({ databaseUrl: db.url, apiRoot: sandbox.url, tokenKeyHex: FLEET_KEY_HEX }));

  // every bot answered once first: its handlers are loaded in the workers that will serve it
  const warm = [noisy, ...quiet];
  for (const b of warm) sandbox.injectMessage(b.token, { chatId: 1, text: 'warm' });
  await waitFor(() => warm.every((b) => repliedAt.has(`${b.botId}:1`)), {
    timeoutMs: 90_000,
    intervalMs: 100,
    what: 'every bot answered once',
  });

  sandbox.injectMessages(noisy.token, BACKLOG, { chats: 1_000, chatBase: 100_000, textPrefix: 'busy ' });
  const noisyRows = (table: string) =>
    count(`select count(*)::int as n from relay.${table} where bot_id = $1 and state = 'pending'`, [noisy.botId]);
  await waitFor(async () => (await noisyRows('inbox')) + (await noisyRows('outbound')) > 1_000, {
    timeoutMs: 60_000,
    intervalMs: 100,
    what: 'the noisy backlog stored',
  });

  const sentAt = new Map<string, number>();
  for (const b of quiet) {
    sandbox.injectMessage(b.token, { chatId: 2, text: 'hi' });
    sentAt.set(`${b.botId}:2`, Date.now());
    await new Promise((r) => setTimeout(r, 100)); // 10/s: the replies overlap the drain, not each other
  }
  await waitFor(() => [...sentAt.keys()].every((k) => repliedAt.has(k)), {
    timeoutMs: 60_000,
    intervalMs: 50,
    what: 'every quiet bot answered',
  });
  const ms = [...sentAt].map(([key, at]) => repliedAt.get(key)! - at).sort((a, b) => a - b);
  process.stdout.write(
    `49 quiet replies beside a ${BACKLOG}-update backlog: median ${ms[24]} ms, slowest ${ms[48]} ms\n`,
  );
  // per quiet bot: the noisy rows stored before its message (inbox) or its reply (outbound) that
  // were not yet handled / delivered when its own row was
  const overtaken = await db.pool.query<{ bot_id: string; n: number }>(
    `select q.bot_id,
            ((select count(*) from relay.inbox n
               where n.bot_id = $1 and n.received_at < q.received_at
                 and (n.handled_at is null or n.handled_at > q.handled_at))
           + (select count(*) from relay.outbound n
               where n.bot_id = $1 and n.created_at < r.created_at
                 and (n.delivered_at is null or n.delivered_at > r.delivered_at)))::int as n
       from relay.inbox q
       join relay.outbound r on r.bot_id = q.bot_id and r.target_chat_id = q.chat_id::text
      where q.bot_id <> $1 and q.chat_id = 2`,
    [noisy.botId],
  );
  const behind = overtaken.rows.filter((r) => r.n < OVERTAKEN).map((r) => `${r.bot_id}: ${r.n}`);
  expect({ quietReplies: overtaken.rows.length, behind }).toEqual({ quietReplies: quiet.length, behind: [] });
  // each quiet reply came from its own bot, to its chat
  for (const b of quiet)
    expect(sandbox.sent(b.token).map((m) => [m.chat_id, m.text])).toEqual([
      [1, 'ok'],
      [2, 'ok'],
    ]);
});
