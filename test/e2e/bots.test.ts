/**
 * The dashboard's Bots pages in headless Chromium against the real admin API on a real database,
 * with the Bot API sandbox answering getMe for the tokens: a bot added through the form is listed
 * and in relay.bots, its token nowhere on the page, in a URL or in the browser's storage; disable,
 * enable and remove change relay.bots; refusals show their code; HTML in what the API answers is
 * shown as text. UPDATE_SCREENSHOTS=1 writes docs/dashboard-bots.png.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Browser, chromium, Page } from 'playwright-core';
import type { BossLedger } from '../../libs/db/boss';
import { createBotApiSandbox, type BotApiSandbox } from '../../libs/sandbox';
import { CHROMIUM, CHROMIUM_ARGS, expectText, screenshotFolder } from '../support/chromium';
import { createMigratedDatabase } from '../support/db';
import { buildTestApp, call, startBoss, testConfig, TOKEN as ADMIN_TOKEN } from '../integration/admin/support';

const KEY = crypto.randomBytes(32).toString('hex');
const SECRET = 'e2e-bots-secret-not-a-secret';
const token = (id: string) => `${id}:${SECRET}`;
const XSS = '<img src=x onerror="window.__xss=1">';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let app: FastifyInstance;
let keyless: FastifyInstance;
let browser: Browser;
let page: Page;
let base: string;
const requested: string[] = [];

async function listen(a: FastifyInstance): Promise<string> {
  await a.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(a.server.address() as AddressInfo).port}`;
}

async function signIn(p: Page, url: string): Promise<void> {
  await p.goto(`${url}/?refresh=1000`);
  await p.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}

async function sqlBot(id: string) {
  const { rows } = await db.pool.query(
    `select enabled, username, handlers, capture_url, allowed_chat_ids::text[] as allowed, ops_chat_id::text as ops,
            settings, token_encrypted::text as sealed from relay.bots where id = $1`,
    [id],
  );
  return rows[0] as Record<string, unknown> | undefined;
}

/** Fills the add form on `p` (already on #/bots/add) and submits it. */
async function submitForm(p: Page, fields: { token: string; handlers?: string; capture?: string; allowed?: string }) {
  await p.getByLabel(/^Token/).fill(fields.token);
  if (fields.handlers) await p.getByLabel(/^Handlers module/).fill(fields.handlers);
  if (fields.capture) await p.getByLabel(/^Capture URL/).fill(fields.capture);
  if (fields.allowed) await p.getByLabel(/^Allowed chat ids/).fill(fields.allowed);
  await p.getByRole('button', { name: 'Add bot' }).click();
}

async function confirm(action: 'Disable' | 'Enable' | 'Remove', id: string): Promise<void> {
  await page.getByRole('button', { name: `${action} bot ${id}…` }).click();
  await page
    .getByRole('dialog')
    .getByRole('button', { name: `${action} bot` })
    .click();
}

const formStatus = () => page.locator('form [role=status]');
const pageStatus = () => page.getByRole('status').last();

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (what .ci/run does), or set CHROMIUM_PATH`);
  db = await createMigratedDatabase('e2e_bots');
  boss = await startBoss(db.url);
  sb = createBotApiSandbox({ limits: { enabled: false } });
  await sb.start();
  app = await buildTestApp(db.pool, boss, {
    config: testConfig({ TOKEN_ENCRYPTION_KEY: KEY, TELEGRAM_API_ROOT: sb.url }),
  });
  base = await listen(app);
  keyless = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_API_ROOT: sb.url }) });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on('request', (r) => requested.push(r.url()));
  await signIn(page, base);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyless?.close();
  await app?.close();
  await sb?.stop();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

describe('Bots in the dashboard', () => {
  test('a bot added through the form is listed and stored; its token is nowhere on the page, in a URL or in storage', async () => {
    await page.getByRole('link', { name: 'Bots', exact: true }).click();
    await page.getByRole('heading', { name: 'Bots', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Add a bot…' }).click();
    await page.getByRole('heading', { name: 'Add a bot', level: 1 }).waitFor();
    await page.getByLabel(/^Operators’ chat id/).fill('-100200');
    await page.getByLabel(/^Settings/).fill('OUTBOUND_RATE_PER_BOT=20/1s\nHANDLER_TIMEOUT=5s');
    await submitForm(page, {
      token: token('7300000001'),
      handlers: 'handlers/shop-bot.ts',
      capture: 'https://collector.example/telegram',
      allowed: '12, -1001\n77',
    });
    await expectText(formStatus(), /Added bot 7300000001 \(@sandbox_7300000001_bot\), enabled: see its page/);
    expect(await page.getByLabel(/^Token/).inputValue()).toBe('');
    const row = await sqlBot('7300000001');
    expect(row).toMatchObject({
      enabled: true,
      username: 'sandbox_7300000001_bot',
      handlers: 'handlers/shop-bot.ts',
      capture_url: 'https://collector.example/telegram',
      allowed: ['12', '-1001', '77'],
      ops: '-100200',
      settings: { OUTBOUND_RATE_PER_BOT: '20/1s', HANDLER_TIMEOUT: '5s' },
    });
    expect(row!.sealed).not.toContain(SECRET);

    // a second bot, disabled, so the list shows both states
    const other = await call(app, 'POST', '/v1/bots', { body: { token: token('7300000002'), enabled: false } });
    expect(other.statusCode).toBe(201);
    await page.getByRole('link', { name: 'see its page' }).click();
    await page.getByRole('heading', { name: 'Bot 7300000001 (@sandbox_7300000001_bot)', level: 1 }).waitFor();
    await expectText(page.locator('dl.meta'), /12, -1001, 77/);
    await page.getByRole('link', { name: '← Bots' }).click();
    const listed = page.locator('tr[data-bot="7300000001"]');
    await expectText(listed, /@sandbox_7300000001_bot/);
    const cells = await listed.locator('td').allTextContents();
    expect(cells.slice(0, 8)).toEqual([
      '7300000001',
      '@sandbox_7300000001_bot',
      'enabled',
      'handlers/shop-bot.ts',
      'https://collector.example/telegram',
      '3 chats',
      '-100200',
      'HANDLER_TIMEOUT=5sOUTBOUND_RATE_PER_BOT=20/1s', // in jsonb's order
    ]);
    await expectText(page.locator('tr[data-bot="7300000002"]'), /disabled.*all chats/);
    await page.screenshot({ path: path.join(screenshotFolder(), 'dashboard-bots.png'), fullPage: true });

    expect(await page.content()).not.toContain(SECRET);
    const storage = await page.evaluate<string>('JSON.stringify([{ ...sessionStorage }, { ...localStorage }])');
    expect(storage).not.toContain(SECRET);
    expect(requested.filter((u) => u.includes(SECRET) || u.includes('7300000001:'))).toEqual([]);
  });

  test('disable and enable from the list change relay.bots; a bot gone meanwhile is refused with its code', async () => {
    await page.goto(`${base}/?refresh=1000#/bots`);
    await page.locator('tr[data-bot="7300000001"]').waitFor();
    await confirm('Disable', '7300000001');
    await expectText(pageStatus(), /Disable: done — bot 7300000001 is now disabled/);
    expect((await sqlBot('7300000001'))!.enabled).toBe(false);
    await expectText(page.locator('tr[data-bot="7300000001"] .badge'), /disabled/);

    await confirm('Enable', '7300000001');
    await expectText(pageStatus(), /Enable: done — bot 7300000001 is now enabled/);
    expect((await sqlBot('7300000001'))!.enabled).toBe(true);
    await expectText(page.locator('tr[data-bot="7300000001"] .badge'), /enabled/);
    const audit = await db.pool.query(
      `select outcome from relay.attempts where subject = 'admin' and subject_key = '7300000001' order by id`,
    );
    expect(audit.rows.map((r) => r.outcome)).toEqual(['admin.bot.add', 'admin.bot.disable', 'admin.bot.enable']);

    // the page keeps showing the bot while it is removed behind its back
    await page.getByLabel(/Live/).uncheck();
    expect((await call(app, 'DELETE', '/v1/bots/7300000002')).statusCode).toBe(200);
    await confirm('Enable', '7300000002');
    await expectText(pageStatus(), /Enable refused: .*\(RELAY_BOT_NOT_FOUND, HTTP 404\)/);
    // the list reloads after the refusal, without the removed bot
    await page.locator('tr[data-bot="7300000002"]').waitFor({ state: 'detached' });
    await expect(page.locator('tr[data-bot="7300000001"]').count()).resolves.toBe(1);
    await page.getByLabel(/Live/).check();
  });

  test('remove from the bot’s page asks first, then leaves the registry', async () => {
    await page.goto(`${base}/#/bots/7300000001`);
    await page.getByRole('button', { name: 'Remove bot 7300000001…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await sqlBot('7300000001')).toBeDefined();
    await confirm('Remove', '7300000001');
    await expectText(pageStatus(), /Remove: done — bot 7300000001 is no longer registered/);
    expect(await sqlBot('7300000001')).toBeUndefined();
    await expectText(page.getByRole('alert'), /Bot 7300000001 is not registered/);
  });

  test('a refused registration shows its code (and the field) and stores nothing', async () => {
    const revoked = '7300000003:revoked-e2e-token';
    sb.revokeToken(revoked);
    await page.goto(`${base}/#/bots/add`);
    await submitForm(page, { token: revoked });
    await expectText(formStatus(), /Not registered: .*\(RELAY_BOT_TOKEN_REJECTED, HTTP 422\)/);
    expect(await page.getByLabel(/^Token/).inputValue()).toBe('');

    await submitForm(page, { token: token('7300000004'), capture: 'ftp://collector.example' });
    await expectText(formStatus(), /Not registered: .*\(RELAY_BOT_INVALID, HTTP 400\) — field capture_url/);
    expect(await page.getByLabel(/^Capture URL/).getAttribute('aria-invalid')).toBe('true');
    expect(await page.content()).not.toContain('revoked-e2e-token');

    // an admin API without TOKEN_ENCRYPTION_KEY cannot store a token, and says so
    const other = await browser.newPage();
    try {
      await signIn(other, await listen(keyless));
      await other.goto(`${other.url().split('#')[0]}#/bots/add`);
      await submitForm(other, { token: token('7300000005') });
      await expectText(other.locator('form [role=status]'), /\(RELAY_TOKEN_KEY, HTTP 503\)/);
    } finally {
      await other.close();
    }
    expect((await db.pool.query(`select count(*)::int as n from relay.bots`)).rows[0].n).toBe(0);
  });

  test('HTML in a username or a handlers path is shown as text, never as markup', async () => {
    await page.goto(`${base}/#/bots`);
    await page.getByRole('link', { name: 'Add a bot…' }).click(); // a fresh form
    await submitForm(page, { token: token('7300000006'), handlers: `handlers/${XSS}.ts` });
    await expectText(formStatus(), /Added bot 7300000006/);
    // the sandbox names its bots itself: the username getMe gave is written where the API reads it
    await db.pool.query(`update relay.bots set username = $1 where id = '7300000006'`, [XSS]);

    await page.goto(`${base}/#/bots`);
    const row = page.locator('tr[data-bot="7300000006"]');
    await expectText(row.locator('td.username'), /^@<img src=x onerror="window.__xss=1">$/);
    expect(await row.locator('td').nth(3).textContent()).toBe(`handlers/${XSS}.ts`);
    expect(await page.locator('main img').count()).toBe(0);
    await page.getByRole('button', { name: 'Disable bot 7300000006…' }).click();
    await expectText(page.getByRole('dialog').getByRole('heading'), /^Disable @<img src=x/);
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

    await page.goto(`${base}/#/bots/7300000006`);
    await page.getByRole('heading', { name: `Bot 7300000006 (@${XSS})`, level: 1 }).waitFor();
    await expectText(page.locator('dl.meta'), /handlers\/<img src=x onerror="window.__xss=1">\.ts/);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate('window.__xss')).toBeUndefined();
  });
});
