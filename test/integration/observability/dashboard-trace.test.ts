/**
 * The trace id of an item in the admin API's detail endpoints and the dashboard's detail view
 *: `trace_id` from the row's stored traceparent, `trace_url` from TRACE_URL_TEMPLATE;
 * shown as a link in headless Chromium. Also the library way in: enqueueOutbound takes a
 * traceparent and refuses a malformed one.
 */
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { Browser, chromium } from 'playwright-core';
import { withTransaction } from '../../../libs/db';
import { enqueueOutbound, OutboundValidationError } from '../../../libs/outbound';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, startBoss, testConfig, TOKEN } from '../admin/support';
import { storeUpdates } from '../dispatch/helpers';
import { CHROMIUM, CHROMIUM_ARGS } from '../../support/chromium';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
const apps: FastifyInstance[] = [];
let browser: Browser | undefined;

const BOT = '1000000001';
const TEMPLATE = 'https://jaeger.example/trace/{trace_id}?from=tg-relay';

beforeAll(async () => {
  db = await createMigratedDatabase('otel_dash');
  boss = await startBoss(db.url);
});
afterAll(async () => {
  await browser?.close();
  for (const a of apps) await a.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

async function app(env: Record<string, string> = {}): Promise<FastifyInstance> {
  const a = await buildTestApp(db.pool, boss, {
    config: testConfig({ TELEGRAM_BOT_TOKEN: `${BOT}:dashboard-trace-token`, ...env }),
  });
  apps.push(a);
  return a;
}

const enqueue = (msgId: string, traceparent?: string) =>
  withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { msg_id: msgId, chat_id: 42, text: 'hello', bot_id: BOT, traceparent }),
  );

test('detail endpoints serve trace_id and the TRACE_URL_TEMPLATE link; untraced items serve nulls; the library refuses a malformed traceparent', async () => {
  const traceId = crypto.randomBytes(16).toString('hex');
  const traced = await enqueue('traced-lib', `00-${traceId}-${crypto.randomBytes(8).toString('hex')}-01`);
  const untraced = await enqueue('untraced-lib');
  await expect(enqueue('bad-lib', '00-123-456-01')).rejects.toThrow(OutboundValidationError);
  await expect(enqueue('bad-lib', '00-123-456-01')).rejects.toMatchObject({
    problems: [expect.objectContaining({ field: 'traceparent' })],
  });
  const [inboxId] = await storeUpdates(
    db.pool,
    boss,
    [{ update_id: 1, message: { message_id: 1, chat: { id: 42, type: 'private' }, date: 1, text: 'x' } }],
    BOT,
  );

  const withTemplate = await app({ TRACE_URL_TEMPLATE: TEMPLATE });
  const a = (await call(withTemplate, 'GET', `/v1/outbound/${traced.id}`)).json();
  expect(a).toMatchObject({ trace_id: traceId, trace_url: `https://jaeger.example/trace/${traceId}?from=tg-relay` });
  expect(a).not.toHaveProperty('traceparent');
  expect((await call(withTemplate, 'GET', `/v1/outbound/${untraced.id}`)).json()).toMatchObject({
    trace_id: null,
    trace_url: null,
  });
  expect((await call(withTemplate, 'GET', `/v1/inbox/${inboxId}`)).json()).toMatchObject({
    trace_id: null,
    trace_url: null,
  });
  await db.pool.query(`update relay.inbox set traceparent = $1 where id = $2`, [
    `00-${traceId}-${'1'.repeat(16)}-01`,
    inboxId,
  ]);
  expect((await call(withTemplate, 'GET', `/v1/inbox/${inboxId}`)).json()).toMatchObject({ trace_id: traceId });
  // a malformed stored value is no trace, not an error
  await db.pool.query(`update relay.inbox set traceparent = 'garbage' where id = $1`, [inboxId]);
  const g = await call(withTemplate, 'GET', `/v1/inbox/${inboxId}`);
  expect([g.statusCode, g.json().trace_id]).toEqual([200, null]);

  const noTemplate = await app();
  expect((await call(noTemplate, 'GET', `/v1/outbound/${traced.id}`)).json()).toMatchObject({
    trace_id: traceId,
    trace_url: null,
  });

  // the dashboard's detail view: the trace id, linked
  await withTemplate.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(withTemplate.server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const page = await browser.newPage();
  await page.goto(`${base}/?refresh=60000`);
  await page.getByLabel('Admin token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  await page.goto(`${base}/?refresh=60000#/outbound/${traced.id}`);
  const link = page.locator('dd[data-field="trace_id"] a');
  await link.waitFor();
  expect(await link.textContent()).toBe(traceId);
  expect(await link.getAttribute('href')).toBe(`https://jaeger.example/trace/${traceId}?from=tg-relay`);
  expect(await page.locator('dd[data-field="trace_url"]').count()).toBe(0);
  await page.goto(`${base}/?refresh=60000#/outbound/${untraced.id}`);
  await page.locator('dd[data-field="trace_id"]', { hasText: 'not traced' }).waitFor();
});
