import Fastify from 'fastify';
import { secretMatches, WebhookAnswer, webhookPlugin } from '../../../libs/ingress/webhook';

// A real listening server and fetch, not app.inject: light-my-request pulls in the ESM-only
// `cookie` package, which jest (CommonJS) cannot load.
async function build(handle: (raw: string) => Promise<WebhookAnswer>, bodyLimit?: number) {
  const app = Fastify();
  await app.register(webhookPlugin, { botId: '42', secret: 's3cr3t-Token_x', handle, bodyLimit });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const inject = async (o: { method: string; url: string; headers: Record<string, string>; payload: string }) => {
    const r = await fetch(base + o.url, { method: o.method, headers: o.headers, body: o.payload });
    const text = await r.text();
    return { statusCode: r.status, headers: Object.fromEntries(r.headers), json: () => JSON.parse(text) };
  };
  return { inject, close: () => app.close() };
}

describe('webhook plugin', () => {
  it('answers 401 without the right secret and never calls the handler', async () => {
    const handle = jest.fn(() => Promise.resolve({ status: 200, body: { ok: true } }));
    const app = await build(handle);
    try {
      for (const headers of [
        {} as Record<string, string>,
        { 'x-telegram-bot-api-secret-token': 'wrong' },
        { 'x-telegram-bot-api-secret-token': 's3cr3t-Token_' },
      ]) {
        const r = await app.inject({
          method: 'POST',
          url: '/telegram/webhook/42',
          headers: { 'content-type': 'application/json', ...headers },
          payload: '{"update_id":1}',
        });
        expect(r.statusCode).toBe(401);
      }
      expect(handle).not.toHaveBeenCalled();
    } finally {
      await app.close();
    }
  });

  it('passes the exact body text and answers what the handler decided', async () => {
    const seen: string[] = [];
    const app = await build((raw) => {
      seen.push(raw);
      return Promise.resolve(
        seen.length === 1
          ? { status: 200, body: { ok: true } }
          : { status: 503, body: { ok: false }, headers: { 'retry-after': '1' } },
      );
    });
    try {
      const body = '{ "update_id" : 1 ,"x":"\\u00e9"}';
      const ok = await app.inject({
        method: 'POST',
        url: '/telegram/webhook/42',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's3cr3t-Token_x' },
        payload: body,
      });
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toEqual({ ok: true });
      expect(ok.json()).not.toHaveProperty('method');
      expect(seen).toEqual([body]);
      const busy = await app.inject({
        method: 'POST',
        url: '/telegram/webhook/42',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's3cr3t-Token_x' },
        payload: body,
      });
      expect(busy.statusCode).toBe(503);
      expect(busy.headers['retry-after']).toBe('1');
    } finally {
      await app.close();
    }
  });

  it('rejects another bot id (404) and bodies over the limit (413)', async () => {
    const handle = jest.fn(() => Promise.resolve({ status: 200, body: { ok: true } }));
    const app = await build(handle, 1000);
    try {
      const other = await app.inject({
        method: 'POST',
        url: '/telegram/webhook/43',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's3cr3t-Token_x' },
        payload: '{}',
      });
      expect(other.statusCode).toBe(404);
      const big = await app.inject({
        method: 'POST',
        url: '/telegram/webhook/42',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's3cr3t-Token_x' },
        payload: JSON.stringify({ update_id: 1, pad: 'x'.repeat(2000) }),
      });
      expect(big.statusCode).toBe(413);
      expect(handle).not.toHaveBeenCalled();
    } finally {
      await app.close();
    }
  });

  it('compares secrets of any length without throwing', () => {
    expect(secretMatches('abc', 'abc')).toBe(true);
    expect(secretMatches('abcd', 'abc')).toBe(false);
    expect(secretMatches(undefined, 'abc')).toBe(false);
    expect(secretMatches(['abc'], 'abc')).toBe(false);
  });
});
