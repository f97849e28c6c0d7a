/** Webhook contract: 409 for getUpdates, secret header, per-chat order, retries, Retry-After, info. */
import { createBotApiSandbox, TG_DESCRIPTIONS, type BotApiSandbox } from '../../../libs/sandbox';
import { startWebhookReceiver, tg, type WebhookResponder } from '../../support/sandbox-helpers';
import { waitFor } from '../../support/wait-for';

const TOKEN = '9001:webhook-secret';

describe('sandbox webhooks', () => {
  let sb: BotApiSandbox;
  let api: string;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;

  async function receive(responder?: WebhookResponder) {
    receiver = await startWebhookReceiver(responder);
    return receiver;
  }

  beforeEach(async () => {
    sb = createBotApiSandbox({ webhookRetry: { baseMs: 40, capMs: 200, timeoutMs: 500 } });
    api = await sb.start();
  });
  afterEach(async () => {
    await sb.stop();
    await receiver?.close();
    receiver = undefined;
  });

  it('refuses getUpdates with 409 while a webhook is set, and allows it again after deleteWebhook', async () => {
    const r = await receive();
    expect((await tg(api, TOKEN, 'setWebhook', { url: r.url })).body).toEqual({ ok: true, result: true });
    const res = await tg(api, TOKEN, 'getUpdates');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ ok: false, error_code: 409, description: TG_DESCRIPTIONS.conflictWebhook });
    expect(res.body.description).toBe(
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    );
    expect((await tg(api, TOKEN, 'deleteWebhook')).body.result).toBe(true);
    expect((await tg(api, TOKEN, 'getUpdates')).status).toBe(200);
  });

  it('setWebhook terminates a pending long poll with the webhook conflict', async () => {
    const r = await receive();
    const poll = tg(api, TOKEN, 'getUpdates', { timeout: 10 });
    await new Promise((res) => setTimeout(res, 100));
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    const res = await poll;
    expect(res.status).toBe(409);
    expect(res.body.description).toBe(TG_DESCRIPTIONS.conflictWebhook);
  });

  it('POSTs each update as JSON with the secret header; a 2xx confirms it', async () => {
    const r = await receive();
    await tg(api, TOKEN, 'setWebhook', { url: r.url, secret_token: 'S3cret_-x' });
    const u = sb.injectMessage(TOKEN, { chatId: 42, text: 'hello hook' });
    await waitFor(() => r.received.length === 1 && sb.pendingCount(TOKEN) === 0, { what: 'delivery' });
    expect(r.received[0].headers['x-telegram-bot-api-secret-token']).toBe('S3cret_-x');
    expect(r.received[0].headers['content-type']).toBe('application/json');
    expect(r.received[0].json).toEqual(u);
    expect(sb.stats().webhook).toEqual({ delivered: 1, failed: 0 });
  });

  it('delivers updates that were pending when the webhook was set, and none twice after a 2xx', async () => {
    sb.injectMessages(TOKEN, 5, { chats: [1, 2] });
    const r = await receive();
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    await waitFor(() => sb.pendingCount(TOKEN) === 0, { what: 'all delivered' });
    await new Promise((res) => setTimeout(res, 100));
    expect(r.received.map((h) => h.json.update_id).sort()).toEqual([100000, 100001, 100002, 100003, 100004]);
  });

  it('drop_pending_updates forgets the queue', async () => {
    sb.injectMessages(TOKEN, 3, { chats: [1] });
    const r = await receive();
    await tg(api, TOKEN, 'setWebhook', { url: r.url, drop_pending_updates: true });
    expect(sb.pendingCount(TOKEN)).toBe(0);
    sb.injectMessage(TOKEN, { chatId: 1, text: 'new' });
    await waitFor(() => r.received.length === 1);
    expect(r.received[0].json.message.text).toBe('new');
  });

  it('keeps one chat in order: the next update only after a 2xx for the previous, retrying failures with backoff', async () => {
    // Chat 7's first update fails twice (500, then a dropped connection) before succeeding.
    let failuresLeft = 2;
    const r = await receive((hook) => {
      if (hook.json.message.text === 'c7-0' && failuresLeft > 0) {
        failuresLeft--;
        return failuresLeft === 1 ? { status: 500 } : 'drop';
      }
      return { status: 200 };
    });
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    for (let i = 0; i < 3; i++) sb.injectMessage(TOKEN, { chatId: 7, text: `c7-${i}` });
    sb.injectMessage(TOKEN, { chatId: 8, text: 'c8-0' });
    await waitFor(() => sb.pendingCount(TOKEN) === 0, { what: 'all delivered' });

    const texts = r.received.map((h) => h.json.message.text as string);
    expect(texts.filter((t) => t.startsWith('c7'))).toEqual(['c7-0', 'c7-0', 'c7-0', 'c7-1', 'c7-2']);
    // The other chat was not blocked by chat 7's failures.
    expect(texts.indexOf('c8-0')).toBeLessThan(texts.lastIndexOf('c7-0'));
    // Backoff: second retry waited at least about 2x base.
    const c7 = r.received.filter((h) => h.json.message.text === 'c7-0').map((h) => h.at);
    expect(c7[1] - c7[0]).toBeGreaterThanOrEqual(30);
    expect(c7[2] - c7[1]).toBeGreaterThanOrEqual(70);
    expect(sb.stats().webhook).toEqual({ delivered: 4, failed: 2 });
  });

  it('records the last error in getWebhookInfo while an update keeps failing', async () => {
    const r = await receive(() => ({ status: 503 }));
    await tg(api, TOKEN, 'setWebhook', { url: r.url, max_connections: 5 });
    sb.injectMessage(TOKEN, { chatId: 1, text: 'doomed' });
    await waitFor(() => r.received.length >= 2);
    const info = (await tg(api, TOKEN, 'getWebhookInfo')).body.result;
    expect(info).toMatchObject({
      url: r.url,
      pending_update_count: 1,
      max_connections: 5,
      has_custom_certificate: false,
    });
    expect(info.last_error_message).toBe('Wrong response from the webhook: 503 Service Unavailable');
    expect(Math.abs(info.last_error_date - Date.now() / 1000)).toBeLessThan(5);
  });

  it('honours a Retry-After header on a failed delivery', async () => {
    const r = await receive((_h, i) => (i === 0 ? { status: 429, headers: { 'Retry-After': '1' } } : { status: 200 }));
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    sb.injectMessage(TOKEN, { chatId: 1, text: 'later' });
    await waitFor(() => r.received.length === 2, { what: 'redelivery' });
    // Backoff alone would retry after 40 ms; Retry-After: 1 asks for a second.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(950);
  });

  it('treats a response slower than the timeout as a failure and redelivers', async () => {
    const r = await receive((_h, i) => (i === 0 ? { status: 200, delayMs: 800 } : { status: 200 }));
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    sb.injectMessage(TOKEN, { chatId: 1, text: 'slow' });
    await waitFor(() => r.received.length === 2 && sb.pendingCount(TOKEN) === 0, { what: 'redelivery' });
    expect((await tg(api, TOKEN, 'getWebhookInfo')).body.result.last_error_message).toBe('Read timeout expired');
  });

  it('delivers different chats concurrently', async () => {
    const r = await receive(() => ({ status: 200, delayMs: 300 }));
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    const t0 = Date.now();
    sb.injectMessages(TOKEN, 10, { chats: 10 });
    await waitFor(() => sb.pendingCount(TOKEN) === 0, { what: 'all delivered' });
    // Ten chats, 300 ms each: serial would take 3 s.
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('executes a method returned in the webhook response (webhook reply)', async () => {
    const r = await receive((hook) => ({
      status: 200,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ method: 'sendMessage', chat_id: hook.json.message.chat.id, text: 'replied inline' }),
    }));
    await tg(api, TOKEN, 'setWebhook', { url: r.url });
    sb.injectMessage(TOKEN, { chatId: 3, text: 'ping' });
    await waitFor(() => sb.sent(TOKEN).length === 1, { what: 'webhook reply' });
    expect(sb.sent(TOKEN)[0]).toMatchObject({ chat_id: 3, text: 'replied inline' });
    expect(sb.calls(TOKEN, { method: 'sendMessage' })[0].via).toBe('webhook_reply');
  });

  it('validates secret_token characters', async () => {
    const res = await tg(api, TOKEN, 'setWebhook', { url: 'http://127.0.0.1:1/x', secret_token: 'bad token!' });
    expect([res.status, res.body.description]).toEqual([400, TG_DESCRIPTIONS.badSecretToken]);
  });
});
