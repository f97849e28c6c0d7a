/**
 * The operator dashboard in a real browser (Debian's headless Chromium driven by playwright-core)
 * against a real admin API, real PostgreSQL, a real worker and the sandbox collector.
 *
 * Screenshots land in $TMPDIR/tg-relay-dashboard-screenshots; with `UPDATE_SCREENSHOTS=1` in docs/ instead
 * (docs/dashboard.md shows them).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../libs/db/boss';
import { Browser, chromium, Page } from 'playwright-core';
import { loadConfig } from '../../libs/config';
import { startIngress } from '../../libs/ingress/runtime';
import { createBotApiSandbox, createCollector, Collector, SANDBOX_DEFAULT_TOKEN } from '../../libs/sandbox';
import type { Worker } from '../../libs/queue';
import { countByState, insertCaptures, makeCapture } from '../support/capture-fixtures';
import { CHROMIUM, CHROMIUM_ARGS, expectText, screenshotFolder } from '../support/chromium';
import { createMigratedDatabase } from '../support/db';
import { waitFor } from '../support/wait-for';
import { startCaptureWorker, testLogger } from '../support/worker-harness';
import { buildTestApp, startBoss, testConfig, TOKEN } from '../integration/admin/support';

const SHOTS = screenshotFolder();

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let collector: Collector;
let worker: Worker;
let app: FastifyInstance;
let browser: Browser;
let page: Page;
let base: string;

const FAILED = 4;
const DELIVERED = 3;

async function dbCounts(table: 'captures' | 'outbound' | 'inbox'): Promise<Record<string, number>> {
  const { rows } = await db.pool.query(`select state, count(*)::int as n from relay.${table} group by state`);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

/** The count the overview shows for a kind and state (the cell carries it as data-count). */
async function shownCount(kind: string, state: string): Promise<number> {
  return Number(await page.locator(`td[data-kind="${kind}"][data-state="${state}"]`).getAttribute('data-count'));
}

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (what .ci/run does), or set CHROMIUM_PATH`);
  db = await createMigratedDatabase('e2e_dash');
  boss = await startBoss(db.url);
  collector = createCollector();
  await collector.start();

  // captures the collector refuses (422: terminal, failed at the first attempt) …
  collector.setFaults({ rejectRate: 1, rejectStatus: 422 });
  await insertCaptures(
    db.pool,
    boss,
    Array.from({ length: FAILED }, () => makeCapture({ chatId: 42, text: 'secret user text' })),
  );
  worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl, pollIntervalMs: 200 });
  await worker.start();
  await waitFor(async () => (await countByState(db.pool)).failed === FAILED, {
    timeoutMs: 20_000,
    what: `${FAILED} failed captures`,
  });
  // … and captures it accepts
  collector.setFaults(null);
  await insertCaptures(
    db.pool,
    boss,
    Array.from({ length: DELIVERED }, () => makeCapture({ chatId: 43 })),
  );
  await waitFor(async () => (await countByState(db.pool)).delivered === DELIVERED, {
    timeoutMs: 20_000,
    what: `${DELIVERED} delivered captures`,
  });
  // a poller's cursor row, so the overview has a bot to show
  await db.pool.query(
    `insert into relay.cursor (bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at)
     values ('1', 100008, 'poller@e2e', 3, now() + interval '10 seconds', 3, now())`,
  );

  // with a bot token: POST /v1/messages needs to know the bot (no worker of this test registers one)
  app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: '1:e2e-dashboard-bot-token' }) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await worker?.stop({ timeoutMs: 5_000 });
  await collector?.stop();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

describe('operator dashboard in headless Chromium', () => {
  test('a wrong token is refused and nothing is shown', async () => {
    await page.goto(`${base}/?refresh=1000`);
    await page.getByLabel('Admin token').fill('not-the-admin-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expectText(page.getByRole('alert'), /refused by the admin API \(401\)/);
    expect(await page.getByRole('heading', { name: 'Overview' }).count()).toBe(0);
    expect(await page.evaluate("sessionStorage.getItem('tg-relay-admin-token')")).toBeNull();
  });

  test('signing in shows the overview with the counts in the database', async () => {
    await page.getByLabel('Admin token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.locator('td[data-kind="captures"][data-state="failed"]').waitFor();
    for (const kind of ['captures', 'outbound', 'inbox'] as const) {
      const states =
        kind === 'inbox' ? ['pending', 'handled', 'failed'] : ['pending', 'delivering', 'delivered', 'failed'];
      const inDb = await dbCounts(kind);
      for (const state of states)
        expect([kind, state, await shownCount(kind, state)]).toEqual([kind, state, inDb[state] ?? 0]);
    }
    expect(await shownCount('captures', 'failed')).toBe(FAILED);
    expect(await shownCount('captures', 'delivered')).toBe(DELIVERED);
    // the poller's row, and charts drawn from relay.attempts
    await expectText(page.locator('section[aria-labelledby="bots-title"] table'), /poller@e2e/);
    const deliveredChart = page.locator('section[aria-labelledby="card-captures"] svg[role="img"]').first();
    expect(await deliveredChart.getAttribute('aria-label')).toMatch(
      /^Delivered \/ min, last 15 minutes: 3 in 15 min, latest \d+, peak [1-3]$/,
    );
    const perMinute = await deliveredChart.locator('rect title').allTextContents(); // "12:03:00: 2"
    expect(perMinute).toHaveLength(15);
    expect(perMinute.reduce((sum, t) => sum + Number(t.split(': ').pop()), 0)).toBe(DELIVERED);
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-overview.png'), fullPage: true });
  });

  test('filtering failed captures lists exactly them; one opens with its attempts, its text hidden until revealed', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Captures' }).click();
    await page.getByRole('heading', { name: 'Captures', level: 1 }).waitFor();
    await page.getByLabel('State').selectOption('failed');
    await page.getByRole('button', { name: 'Apply' }).click();
    await waitFor(
      async () => (await page.locator('tbody tr').count()) === FAILED && page.url().includes('state=failed'),
      { what: 'the failed captures' },
    );
    const { rows: failed } = await db.pool.query(
      `select id from relay.captures where state = 'failed' order by created_at desc, id desc`,
    );
    expect(
      await page.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-id')))),
    ).toEqual(failed.map((r) => Number(r.id)));
    expect(await page.locator('tbody .badge').allTextContents()).toEqual(Array(FAILED).fill('failed'));

    const id = Number(failed[0].id);
    // from the keyboard: the row's link, then Enter
    await page.getByRole('link', { name: `Open capture ${id}` }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Capture #${id}`, level: 1 }).waitFor();
    const timeline = page.locator('table.timeline tbody tr');
    await timeline.first().waitFor();
    expect(await timeline.count()).toBe(1);
    await expectText(timeline.first(), /failed/);
    await expectText(timeline.first().locator('td').nth(3), /^422$/);
    expect(await timeline.first().locator('td').nth(5).textContent()).toBe(worker.workerId);
    // the message text is nowhere on the page until the operator asks for it
    expect(await page.locator('main').textContent()).not.toContain('secret user text');
    const reveal = page.getByRole('button', { name: /Reveal payload/ });
    expect(await reveal.getAttribute('aria-expanded')).toBe('false');
    await reveal.focus();
    await page.keyboard.press('Space');
    await expectText(page.locator('pre.payload'), /secret user text/);
    await page.getByRole('button', { name: /Hide payload/ }).click();
    expect(await page.locator('main').textContent()).not.toContain('secret user text');
  });

  test('bulk retry shows the dry-run count, asks for confirmation, and the worker delivers what it retried', async () => {
    await page.goto(`${base}/?refresh=1000#/captures?state=failed`);
    await page.getByRole('heading', { name: 'Captures', level: 1 }).waitFor();
    await waitFor(async () => (await page.locator('tbody tr').count()) === FAILED, { what: 'the failed list' });

    // first the operator backs out: a dry run changed nothing
    await page.getByRole('button', { name: /Retry all failed matching this filter/ }).click();
    const dialog = page.getByRole('dialog');
    await expectText(dialog, new RegExp(`Dry run: ${FAILED} failed captures match`));
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-bulk-retry.png') });
    await page.keyboard.press('Escape'); // the keyboard backs out of a confirmation
    await expectText(page.getByRole('status').filter({ hasText: 'cancelled' }), /nothing changed/);
    expect((await countByState(db.pool)).failed).toBe(FAILED);

    await page.getByRole('button', { name: /Retry all failed matching this filter/ }).click();
    await dialog.getByLabel(/Reason/).fill('collector fixed');
    await dialog.getByRole('button', { name: `Retry ${FAILED}` }).click();
    await expectText(page.getByRole('status').filter({ hasText: 'Retried' }), new RegExp(`Retried ${FAILED} captures`));

    // the worker delivers them; the live list empties and the overview follows
    await waitFor(async () => (await countByState(db.pool)).delivered === FAILED + DELIVERED, {
      timeoutMs: 20_000,
      what: 'the retried captures delivered',
    });
    await page.getByText('No captures match.').waitFor({ timeout: 10_000 });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
    await waitFor(async () => (await shownCount('captures', 'delivered')) === FAILED + DELIVERED, {
      timeoutMs: 10_000,
      what: 'the overview to show them delivered',
    });
    expect(await shownCount('captures', 'failed')).toBe(0);

    // one of them: its first attempt failed, the bulk retry (and the dry runs that counted it) are
    // in its history, then the delivery
    const { rows: retried } = await db.pool.query(
      `select id from relay.captures where chat_id = 42 order by id limit 1`,
    );
    await page.goto(`${base}/?refresh=1000#/captures/${retried[0].id}`);
    const timeline = page.locator('table.timeline tbody tr');
    await waitFor(async () => (await timeline.count()) >= 5, { what: 'the history rows' }).catch(() => undefined);
    expect(await timeline.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-outcome')))).toEqual([
      'failed',
      'admin.retry_bulk_dry_run',
      'admin.retry_bulk_dry_run',
      'admin.retry_bulk',
      'delivered',
    ]);
    await expectText(timeline.nth(3), /admin: bulk retry.*reason: collector fixed/);
    await expectText(page.locator('dd[data-field="state"]'), /^delivered$/);
    await page.screenshot({ path: path.join(SHOTS, 'dashboard-detail.png'), fullPage: true });

    const { rows: audit } = await db.pool.query(
      `select outcome, actor, details from relay.attempts where subject = 'admin' order by id`,
    );
    expect(audit.map((a) => a.outcome)).toEqual([
      'admin.retry_bulk_dry_run',
      'admin.retry_bulk_dry_run',
      'admin.retry_bulk',
    ]);
    expect(audit[2]).toMatchObject({
      actor: 'admin',
      details: { kind: 'captures', count: FAILED, reason: 'collector fixed' },
    });
  });

  test('a test message sent from the overview can be cancelled from its detail view; both are in the audit trail', async () => {
    await page.goto(`${base}/?refresh=1000#/overview`);
    await page.getByLabel('Chat id').fill('4242');
    await page.getByLabel('Text', { exact: true }).fill('ping from the e2e test');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const sent = page.locator('form[aria-labelledby="send-title"] [role="status"]');
    await expectText(sent, /Enqueued outbound #\d+ \(dashboard-[a-z0-9-]+\), pending/);
    const { rows } = await db.pool.query(`select id, state, chat_id, text from relay.outbound`);
    expect(rows).toEqual([
      { id: expect.anything(), state: 'pending', chat_id: '4242', text: 'ping from the e2e test' },
    ]);

    await sent.getByRole('link').click();
    await page.getByRole('heading', { name: `Outbound message #${rows[0].id}`, level: 1 }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('ping from the e2e test');
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel it' }).click();
    await expectText(page.getByRole('status').filter({ hasText: 'Cancel it' }), /now failed/);
    await expectText(page.locator('dd[data-field="failed_reason"]'), /cancelled/);
    expect((await db.pool.query(`select state, failed_reason from relay.outbound`)).rows).toEqual([
      { state: 'failed', failed_reason: 'cancelled' },
    ]);

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await waitFor(async () => (await page.locator('tbody tr').count()) >= 5, { what: 'the audit rows' });
    expect((await page.locator('tbody tr td:nth-child(2)').allTextContents()).slice(0, 3)).toEqual([
      'cancel',
      'enqueue',
      'retry_bulk',
    ]);
  });

  test('a sendPhoto shows its method in the outbound list, filters by method, and keeps its caption hidden until revealed', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/messages',
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: {
        msg_id: 'e2e-photo',
        chat_id: 4242,
        method: 'sendPhoto',
        params: { photo: 'https://example.com/a.jpg', caption: 'secret caption' },
      },
    });
    expect(res.statusCode).toBe(201);
    const photoId = Number(res.json().id);
    await page.goto(`${base}/?refresh=1000#/outbound`);
    await page.getByRole('heading', { name: 'Outbound', level: 1 }).waitFor();
    await waitFor(async () => (await page.locator('tbody tr').count()) === 2, { what: 'both outbound rows' });
    const methodCells = () => page.locator('tbody tr td:nth-child(4)').allTextContents();
    expect(await methodCells()).toEqual(['sendPhoto', 'sendMessage']);
    await page.getByLabel('Method').selectOption('sendPhoto');
    await page.getByRole('button', { name: 'Apply' }).click();
    await waitFor(
      async () => (await page.locator('tbody tr').count()) === 1 && page.url().includes('method=sendPhoto'),
      { what: 'the sendPhoto row alone' },
    );
    expect(await methodCells()).toEqual(['sendPhoto']);

    await page.getByRole('link', { name: `Open outbound message ${photoId}` }).click();
    await page.getByRole('heading', { name: `Outbound message #${photoId}`, level: 1 }).waitFor();
    await expectText(page.locator('dd[data-field="method"]'), /^sendPhoto$/);
    await expectText(page.locator('[data-content-note]'), /No message text: a sendPhoto carries caption/);
    expect(await page.locator('main').textContent()).not.toContain('secret caption');
    expect(await page.getByRole('button', { name: /Reveal message text/ }).count()).toBe(0);
    await page.getByRole('button', { name: /Reveal parameters/ }).click();
    await expectText(page.locator('pre.payload'), /secret caption/);
  });

  test('a token the API stops accepting sends the operator back to sign in', async () => {
    await page.evaluate("sessionStorage.setItem('tg-relay-admin-token', 'revoked-token-0123456789')");
    await page.reload();
    await expectText(page.getByRole('alert'), /refused \(401\)/);
    await page.getByLabel('Admin token').waitFor();
  });
});

describe('sandbox mode', () => {
  const sandbox = createBotApiSandbox({ port: 0, seed: 3 });
  let sandboxApp: FastifyInstance;
  let ingress: Awaited<ReturnType<typeof startIngress>>;

  beforeAll(async () => {
    await sandbox.start();
    const config = loadConfig({
      TELEGRAM_BOT_TOKEN: SANDBOX_DEFAULT_TOKEN,
      TELEGRAM_API_ROOT: sandbox.url,
      POLL_TIMEOUT: '1s',
      LEASE_TTL: '5s',
      LOG_LEVEL: 'silent',
    });
    ingress = await startIngress({ config, databaseUrl: db.url, logger: testLogger() });
    sandboxApp = await buildTestApp(db.pool, boss, {
      sandbox: { url: sandbox.url, token: SANDBOX_DEFAULT_TOKEN, chatId: 777 },
    });
    await sandboxApp.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await sandboxApp?.close();
    await ingress?.stop();
    await sandbox.stop();
  });

  test('a message written in the chat panel reaches the inbox and the collector, and the panel shows it', async () => {
    const sbPage = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    try {
      await sbPage.goto(`http://127.0.0.1:${(sandboxApp.server.address() as AddressInfo).port}/?refresh=1000#/sandbox`);
      await sbPage.getByLabel('Admin token').fill(TOKEN);
      await sbPage.getByRole('button', { name: 'Sign in' }).click();
      await sbPage.getByRole('heading', { name: 'Sandbox chat', level: 1 }).waitFor();
      expect(await sbPage.getByLabel('From chat').inputValue()).toBe('777');
      await sbPage.getByLabel('Message', { exact: true }).fill('hello relay');
      await sbPage.getByRole('button', { name: 'Send' }).click();

      const bubble = sbPage.locator('li.bubble.user');
      await bubble.waitFor();
      const updateId = Number(await bubble.getAttribute('data-update-id'));
      // the poller stores it, the worker delivers its capture to the collector; the panel follows
      await waitFor(() => collector.received().some((r) => (r.body as { update_id?: number }).update_id === updateId), {
        timeoutMs: 15_000,
        what: 'the capture at the collector',
      });
      await expectText(bubble.locator('.flow'), /capture #\d+ delivered/);
      await expectText(bubble.locator('.flow'), /inbox #\d+ (pending|handled)/);
      const { rows } = await db.pool.query(`select state from relay.inbox where update_id = $1 and chat_id = 777`, [
        updateId,
      ]);
      expect(rows).toHaveLength(1);
      // a bot reply in that chat shows up in the conversation
      await fetch(`${sandbox.url}/bot${SANDBOX_DEFAULT_TOKEN}/sendMessage`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: 777, text: 'echo: hello relay' }),
      });
      await expectText(sbPage.locator('li.bubble.bot'), /echo: hello relay/);
      await sbPage.screenshot({ path: path.join(SHOTS, 'dashboard-sandbox.png') });
    } finally {
      await sbPage.close();
    }
  });
});
