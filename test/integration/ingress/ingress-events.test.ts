/**
 * Ingress events (Poller.events, the webhook handler's events) on a real PostgreSQL and the Bot API
 * sandbox: observers hear what committed, and a listener that throws breaks neither a getUpdates
 * nor a batch transaction.
 */
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createIngressEvents, type IngressEventMap } from '../../../libs/ingress/events';
import { createWebhookHandler } from '../../../libs/ingress/webhook';
import { createBoss } from '../../../libs/db';
import { createMigratedDatabase } from '../../support/db';
import { makeMessageUpdate } from '../../support/ingress-fixtures';
import {
  acquireLease,
  cursorOf,
  inboxCount,
  inboxUpdateIds,
  memoryLogger,
  newBotToken,
  range,
  startSandbox,
  startTestPoller,
  TestPoller,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const running: TestPoller[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_events');
  sandbox = await startSandbox();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

const observerErrors = (lines: { msg?: string; event?: unknown }[]) =>
  lines.filter((l) => String(l.msg).startsWith('an observer of this event threw')).map((l) => String(l.event));

describe('Poller.events', () => {
  it('a throwing listener breaks no poll and no batch: every update is stored once, the offset advances, later listeners hear every commit', async () => {
    const { token, botId } = newBotToken();
    const inj = sandbox.injectMessages(token, 300, { chats: 5, chatBase: Number(botId) });
    const p = startTestPoller({ pool: db.pool, url: db.url, apiRoot: sandbox.url, token, botId });
    running.push(p);
    const boom = () => {
      throw new Error('observer bug');
    };
    p.poller.events.on('getUpdates', boom);
    p.poller.events.on('batch', boom);
    const batches: IngressEventMap['batch'][] = [];
    const polls: IngressEventMap['getUpdates'][] = [];
    p.poller.events.on('batch', (e) => batches.push(e));
    p.poller.events.on('getUpdates', (e) => polls.push(e));
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 300, { what: '300 updates stored' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(inj.first_update_id!, 300));
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(inj.last_update_id! + 1);
    await waitFor(() => sandbox.confirmedOffset(token) === inj.last_update_id! + 1 || undefined, {
      what: 'the poller polled past the batches',
    });
    const committed = batches.filter((b) => b.result === 'committed');
    expect(committed.length).toBe(batches.length);
    expect(committed.reduce((a, b) => a + (b.result === 'committed' ? b.stored : 0), 0)).toBe(300);
    expect(committed.every((b) => b.transport === 'polling')).toBe(true);
    expect(polls.filter((e) => e.result === 'updates').length).toBe(committed.length);
    expect(p.poller.status()).toMatchObject({ state: 'polling', updates: 300 });
    expect(p.poller.holdsLease()).toBe(true);
    expect(observerErrors(p.logs.lines()).sort()).toEqual(['batch', 'getUpdates']);
  });
});

describe('the webhook handler’s events', () => {
  it('a throwing batch listener does not turn a committed delivery into a 500; a duplicate is told as such', async () => {
    const { botId } = newBotToken();
    const fence = await acquireLease(db.pool, botId);
    const logs = memoryLogger();
    const events = createIngressEvents(logs.logger);
    events.on('batch', () => {
      throw new Error('observer bug');
    });
    const heard: IngressEventMap['batch'][] = [];
    events.on('batch', (e) => heard.push(e));
    const handle = createWebhookHandler({
      pool: db.pool,
      boss: createBoss(db.url, { max: 1 }),
      botId,
      fence: () => fence,
      leaseTtlMs: 60_000,
      decodePolicy: 'stop',
      allowedChatIds: [],
      logger: logs.logger,
      events,
    });
    const body = JSON.stringify(makeMessageUpdate({ updateId: 5, chatId: Number(botId), text: 'hi' }));
    expect((await handle(body)).status).toBe(200);
    expect((await handle(body)).status).toBe(200);
    expect(await inboxCount(db.pool, botId)).toBe(1);
    expect(heard.map((e) => (e.result === 'committed' ? [e.transport, e.stored, e.duplicates] : e.result))).toEqual([
      ['webhook', 1, 0],
      ['webhook', 0, 1],
    ]);
    expect(observerErrors(logs.lines())).toEqual(['batch']);
  });

  it('a fenced batch is told as fenced (and answered 503)', async () => {
    const { botId } = newBotToken();
    const fence = await acquireLease(db.pool, botId);
    const events = createIngressEvents(memoryLogger().logger);
    const heard: string[] = [];
    events.on('batch', (e) => heard.push(e.result));
    const handle = createWebhookHandler({
      pool: db.pool,
      boss: createBoss(db.url, { max: 1 }),
      botId,
      fence: () => ({ ...fence, generation: fence.generation + 1 }),
      leaseTtlMs: 60_000,
      decodePolicy: 'stop',
      allowedChatIds: [],
      logger: memoryLogger().logger,
      events,
    });
    const r = await handle(JSON.stringify(makeMessageUpdate({ updateId: 9, chatId: Number(botId), text: 'x' })));
    expect(r.status).toBe(503);
    expect(heard).toEqual(['fenced']);
    expect(await inboxCount(db.pool, botId)).toBe(0);
  });
});
