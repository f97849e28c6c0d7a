/**
 * The dashboard's Broadcasts pages in headless Chromium, against a real admin API, real PostgreSQL,
 * a real `tg-relay worker` process and the sandbox Bot API: what the pages show is what the rows
 * in SQL say, and pause, resume and cancel from the page act on those rows (a refusal is shown with
 * its code).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Browser, chromium, Page } from 'playwright-core';
import { broadcastStatus } from '../../libs/broadcasts';
import type { BossLedger } from '../../libs/db/boss';
import { createBotApiSandbox, type BotApiSandbox } from '../../libs/sandbox';
import { CHROMIUM, CHROMIUM_ARGS, expectText, screenshotFolder } from '../support/chromium';
import { createMigratedDatabase } from '../support/db';
import { waitFor } from '../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../support/worker-process';
import { buildTestApp, call, startBoss, testConfig, TOKEN as ADMIN_TOKEN } from '../integration/admin/support';

const BOT_TOKEN = '7070:e2e-broadcast-token-not-a-secret';
const BLOCKED = ['61001', '61002', '61003'];

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let worker: WorkerProcess;
let app: FastifyInstance;
let browser: Browser;
let page: Page;
let base: string;

const chats = (n: number, from: number) => Array.from({ length: n }, (_, i) => String(from + i));

async function create(chatIds: string[], text: string): Promise<string> {
  const r = await call(app, 'POST', '/v1/broadcasts', { body: { chat_ids: chatIds, text } });
  expect(r.statusCode).toBe(201);
  return r.json().id as string;
}

/** The broadcast's rows in relay.outbound by state. */
async function sqlCounts(id: string): Promise<Record<string, number>> {
  const { rows } = await db.pool.query(
    'select state, count(*)::int as n from relay.outbound where broadcast_id = $1::bigint group by state',
    [id],
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/** The figure the detail page shows for a count (the cell carries the key as data-count). */
async function shown(key: string): Promise<number> {
  return Number((await page.locator(`dd[data-count="${key}"]`).textContent())!.replace(/,/g, ''));
}

async function confirm(action: 'Pause' | 'Resume' | 'Cancel'): Promise<void> {
  await page.getByRole('button', { name: `${action}…` }).click();
  await page
    .getByRole('dialog')
    .getByRole('button', { name: `${action} broadcast` })
    .click();
}

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (what .ci/run does), or set CHROMIUM_PATH`);
  db = await createMigratedDatabase('e2e_bcast');
  boss = await startBoss(db.url);
  sb = createBotApiSandbox({ seed: 11 });
  await sb.start();
  for (const chat of BLOCKED) sb.scriptChatError(BOT_TOKEN, Number(chat), { kind: 'blocked', times: 5 });
  app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: BOT_TOKEN }) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  // slow enough that a pause lands in the middle of a broadcast of a few hundred chats
  worker = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_ROOT: sb.url,
    OUTBOUND_RATE_PER_BOT: '20/1s',
  });
  await workerStarted(worker);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${base}/?refresh=1000`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await killWorker(worker);
  await app?.close();
  await sb?.stop();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

describe('Broadcasts in the dashboard', () => {
  test('a finished broadcast: list and detail show the counts of its rows, blocked chats apart', async () => {
    const id = await create([...chats(27, 60001), ...BLOCKED], 'weekly news');
    await waitFor(async () => (await broadcastStatus(db.pool, id))?.state === 'completed', {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: 'the broadcast completes',
    });
    await page.getByRole('link', { name: 'Broadcasts', exact: true }).click();
    await page.getByRole('heading', { name: 'Broadcasts', level: 1 }).waitFor();
    const row = page.locator(`tr[data-broadcast="${id}"]`);
    await expectText(row, /completed/);
    await expectText(row, /30 of 30 done \(100%\)/);

    await row.getByRole('link', { name: `#${id}` }).click();
    await page.getByRole('heading', { name: `Broadcast #${id}`, level: 1 }).waitFor();
    await page.locator('dd[data-count="delivered"]').waitFor();
    const inSql = await sqlCounts(id);
    expect(inSql).toEqual({ delivered: 27, failed: 3 });
    expect([await shown('delivered'), await shown('blocked'), await shown('failed')]).toEqual([27, 3, 0]);
    expect(await page.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('30');
    // the blocked chats are recorded for the next broadcast to skip
    const status = await db.pool.query(
      `select chat_id from relay.chat_status where chat_id = any($1::text[]) order by 1`,
      [BLOCKED],
    );
    expect(status.rows.map((r) => r.chat_id)).toEqual(BLOCKED);
    await expectText(page.getByRole('group', { name: 'Actions' }), /No action applies to a completed broadcast/);
  });

  test('pause, resume and cancel from the page act on the rows; the page shows what SQL holds', async () => {
    const id = await create(chats(400, 70001), 'spring sale');
    await page.goto(`${base}/?refresh=1000#/broadcasts/${id}`);
    await page.getByRole('heading', { name: `Broadcast #${id}`, level: 1 }).waitFor();
    await waitFor(async () => ((await sqlCounts(id)).delivered ?? 0) >= 20, { timeoutMs: 30_000, what: '20 sent' });

    await confirm('Pause');
    await expectText(page.getByRole('status').last(), /Pause: done — now paused, [\d,]+ messages held, audit #\d+/);
    await waitFor(async () => !(await sqlCounts(id)).delivering, { timeoutMs: 15_000, what: 'in-flight sends end' });
    const paused = await sqlCounts(id);
    expect(paused.pending).toBeUndefined();
    expect(paused.paused).toBeGreaterThan(0);
    // the next live refreshes catch up with SQL, which no longer moves
    await waitFor(async () => (await shown('delivered')) === paused.delivered, { timeoutMs: 10_000, what: 'shown' });
    expect([await shown('paused'), await shown('pending')]).toEqual([paused.paused, 0]);
    await expectText(page.locator('.page-head .badge'), /paused/);
    const sentWhilePaused = sb.sent(BOT_TOKEN).length;
    await page.screenshot({ path: path.join(screenshotFolder(), 'dashboard-broadcasts.png'), fullPage: true });
    await new Promise((r) => setTimeout(r, 1500));
    expect(sb.sent(BOT_TOKEN).length).toBe(sentWhilePaused);

    await confirm('Resume');
    await expectText(page.getByRole('status').last(), /Resume: done — now (pending|running), [\d,]+ messages released/);
    await waitFor(async () => ((await sqlCounts(id)).delivered ?? 0) >= paused.delivered + 10, {
      timeoutMs: 30_000,
      what: '10 more sent after resume',
    });

    await confirm('Cancel');
    await expectText(page.getByRole('status').last(), /Cancel: done — now cancelled/);
    await waitFor(async () => !(await sqlCounts(id)).delivering, { timeoutMs: 15_000, what: 'in-flight sends end' });
    const final = await sqlCounts(id);
    expect(final.pending ?? 0).toBe(0);
    expect(final.paused ?? 0).toBe(0);
    await waitFor(async () => (await shown('delivered')) === final.delivered, { timeoutMs: 10_000, what: 'shown' });
    // the unfed recipients are dropped at cancel: the page counts what has rows, as the API does
    const s = (await broadcastStatus(db.pool, id))!;
    expect(await shown('cancelled')).toBe(s.counts.cancelled);
    expect(s.counts.cancelled).toBe(final.failed);
    await expectText(page.getByRole('group', { name: 'Actions' }), /No action applies to a cancelled broadcast/);
    // no chat got the message twice
    const perChat = new Map<number, number>();
    for (const m of sb.sent(BOT_TOKEN)) perChat.set(Number(m.chat_id), (perChat.get(Number(m.chat_id)) ?? 0) + 1);
    expect([...perChat.values()].filter((n) => n > 1)).toEqual([]);
  }, 90_000);

  test('an action the broadcast no longer allows is refused on the page with its code', async () => {
    const id = await create(chats(300, 80001), 'too late'); // more than the worker sends meanwhile
    await page.goto(`${base}/#/broadcasts/${id}`);
    await page.getByRole('button', { name: 'Pause…' }).waitFor();
    await page.getByLabel(/Live/).uncheck(); // the page keeps showing the old state
    const r = await call(app, 'POST', `/v1/broadcasts/${id}/cancel`, { body: {} });
    expect(r.statusCode).toBe(200);
    await confirm('Pause');
    await expectText(page.getByRole('status').last(), /Pause refused: .*\(RELAY_BROADCAST_STATE, HTTP 409\)/);
    await expectText(page.locator('.page-head .badge'), /cancelled/);
    await page.getByLabel(/Live/).check();
  });

  test('an unknown broadcast says so', async () => {
    await page.goto(`${base}/#/broadcasts/999999999`);
    await expectText(page.getByRole('alert'), /Broadcast #999999999 does not exist/);
  });
});
