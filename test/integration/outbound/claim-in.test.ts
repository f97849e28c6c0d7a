/**
 * KindWorker.claimIn on outbound.send against the sandbox Bot API: rows written in a transaction
 * and claimed in it (a handled update's replies) are sent once it commits, with the outbound
 * claim's own rules (chat head, free slots); a rollback sends nothing and gives the slots back.
 * A row claimed there has the writing transaction's now() as its started_at; one the loop claimed
 * later has a later one.
 */
import type { PoolClient } from 'pg';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { createWorker, type KindWorker, Worker } from '../../../libs/queue';
import {
  createOutboundKind,
  createOutboundRateLimiter,
  enqueueOutbound,
  outboundSettingsSave,
} from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const TOKEN = '9191:claim-in-test-secret-abcdefghijk';
const BOT = '9191';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let telegram: BotApiClient;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_claim_in');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ seed: 5 });
  telegram = createBotApiClient({ token: TOKEN, apiRoot: await sb.start() });
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: null });
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  sb.reset();
  await db.pool.query(
    'truncate relay.outbound_uploads, relay.outbound, relay.attempts, relay.outbound_bot_rate, relay.outbound_chat_rate',
  );
});
afterAll(async () => {
  telegram.close();
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function startOutbound(concurrency: number) {
  const limiter = createOutboundRateLimiter({
    mode: 'proactive',
    perBot: { count: 200, windowMs: 1000 },
    perChat: { count: 20, windowMs: 1000 },
    perGroup: { count: 20, windowMs: 1000 },
  });
  const w = createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    pollIntervalMs: 60_000,
    kinds: [createOutboundKind({ pool: db.pool, telegram, limiter, opsChatId: null, sendTimeoutMs: 5_000 })],
    config: { concurrency, staleAfterMs: 30_000, retry: { baseMs: 20, capMs: 100, maxAttempts: 5 } },
  });
  worker = w;
  await w.start();
  // the loop's first claim (at start) is over before the test writes anything
  await waitFor(() => w.kinds[0].stats.claimed === 0 && w.kinds[0].running, { what: 'the outbound loop' });
  await new Promise((r) => setTimeout(r, 200));
  return w.kinds[0];
}

const enqueue = (c: PoolClient, msgId: string, chat: number) =>
  enqueueOutbound(c, boss, { msg_id: msgId, chat_id: chat, text: `text of ${msgId}` }, { botId: BOT });

/** How many rows the last writeAndClaim's claimIn said it claimed. */
let claimed = -1;

/** Writes the messages and calls claimIn in one transaction (withTransaction); its now() (the claim's started_at). */
async function writeAndClaim(
  kind: Pick<KindWorker, 'claimIn'>,
  messages: [msgId: string, chat: number][],
  end: 'commit' | 'rollback' = 'commit',
): Promise<Date> {
  let at: Date | undefined;
  const rolledBack = new Error('rolled back on purpose');
  await withTransaction(db.pool, async (c) => {
    for (const [msgId, chat] of messages) await enqueue(c, msgId, chat);
    claimed = await kind.claimIn(
      c,
      messages.map(([m]) => m),
    );
    at = (await c.query<{ now: Date }>('select now()')).rows[0].now;
    if (end === 'rollback') throw rolledBack;
  }).catch((err) => {
    if (err !== rolledBack) throw err;
  });
  return at!;
}

const rowOf = async (msgId: string) =>
  (
    await db.pool.query<{ state: string; started_at: Date; attempts: number }>(
      'select state, started_at, attempts from relay.outbound where msg_id = $1',
      [msgId],
    )
  ).rows[0];
const delivered = (msgId: string) =>
  waitFor(async () => ((await rowOf(msgId))?.state === 'delivered' ? rowOf(msgId) : undefined), {
    what: `${msgId} delivered`,
    timeoutMs: 15_000,
  });
const texts = () => sb.sent(TOKEN).map((m) => m.text);

it('sends rows claimed in the writing transaction once it commits, claimed at its own time', async () => {
  const kind = await startOutbound(4);
  const at = await writeAndClaim(kind, [
    ['ci-a', 701],
    ['ci-b', 702],
  ]);
  for (const id of ['ci-a', 'ci-b']) {
    const r = await delivered(id);
    // started_at is now() of the transaction that wrote the row: it was claimed there, not later
    expect(r.started_at.getTime()).toBe(at.getTime());
    expect(r.attempts).toBe(1);
  }
  expect(texts().sort()).toEqual(['text of ci-a', 'text of ci-b']);
  const audit = await db.pool.query(
    `select subject_key, outcome from relay.attempts where subject = 'outbound' order by subject_key`,
  );
  expect(audit.rows).toEqual([
    { subject_key: 'ci-a', outcome: 'delivered' },
    { subject_key: 'ci-b', outcome: 'delivered' },
  ]);
  const jobs = await db.pool.query(
    `select j.state from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id where o.msg_id in ('ci-a', 'ci-b')`,
  );
  expect(jobs.rows.map((r) => r.state)).toEqual(['completed', 'completed']);
});

it('a rollback sends nothing and gives its slots back', async () => {
  const kind = await startOutbound(1);
  await writeAndClaim(kind, [['ci-gone', 711]], 'rollback');
  // the one slot is free again: the next transaction's row is claimed in it
  const at = await writeAndClaim(kind, [['ci-next', 712]]);
  const r = await delivered('ci-next');
  expect(r.started_at.getTime()).toBe(at.getTime());
  expect(await rowOf('ci-gone')).toBeUndefined();
  expect(texts()).toEqual(['text of ci-next']);
  expect(kind.inFlight).toBe(0);
});

it('claims no more than the free slots; the loop, woken after the commit, sends the rest', async () => {
  const kind = await startOutbound(2);
  const ids = ['ci-1', 'ci-2', 'ci-3', 'ci-4'];
  const at = await writeAndClaim(
    kind,
    ids.map((id, i) => [id, 721 + i]),
  );
  const rows = await Promise.all(ids.map(delivered));
  const inTransaction = rows.filter((r) => r.started_at.getTime() === at.getTime());
  expect(inTransaction).toHaveLength(2);
  expect(claimed).toBe(2);
  expect(rows.every((r) => r.attempts === 1)).toBe(true);
  expect(texts().sort()).toEqual(ids.map((id) => `text of ${id}`));
});

it("leaves a row that is not its chat's head to the loop: it goes after the older message", async () => {
  const kind = await startOutbound(4);
  await withTransaction(db.pool, (c) => enqueue(c, 'ci-older', 731));
  // pending, not due for a second: it is not claimable, yet it is the chat's head
  await db.pool.query(
    `update relay.outbound set next_attempt_at = now() + interval '1 second' where msg_id = 'ci-older'`,
  );
  const at = await writeAndClaim(kind, [['ci-newer', 731]]);
  expect(claimed).toBe(0);
  const newer = await delivered('ci-newer');
  expect(newer.started_at.getTime()).toBeGreaterThan(at.getTime());
  expect(texts()).toEqual(['text of ci-older', 'text of ci-newer']);
});
