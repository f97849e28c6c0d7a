/** Flood control: 429 with retry_after in body and header; correctly paced clients never see one. */
import {
  createBotApiSandbox,
  DEFAULT_RATE_LIMITS,
  type BotApiSandbox,
  type RateLimitsInput,
} from '../../../libs/sandbox';
import { tg } from '../../support/sandbox-helpers';

const TOKEN = '6060:limits-secret';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('sandbox rate limits', () => {
  let sb: BotApiSandbox;
  let api: string;

  afterEach(async () => {
    await sb.stop();
  });

  async function start(limits?: RateLimitsInput) {
    sb = createBotApiSandbox({ limits });
    api = await sb.start();
  }

  it('answers 429 with parameters.retry_after and a Retry-After header, and counts it', async () => {
    await start();
    const first = await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'a' });
    expect(first.status).toBe(200);
    const second = await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'b' });
    expect(second.status).toBe(429);
    expect(second.body).toEqual({
      ok: false,
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    expect(second.headers.get('retry-after')).toBe('1');
    expect(sb.stats().rate_limited).toBe(1);
    expect(sb.sent(TOKEN).map((s) => s.text)).toEqual(['a']);
    expect(sb.calls(TOKEN, { method: 'sendMessage' }).map((c) => c.outcome)).toEqual(['ok', 'rate_limited']);
  });

  it('accepts the send again after waiting retry_after seconds', async () => {
    await start();
    await tg(api, TOKEN, 'sendMessage', { chat_id: 2, text: 'a' });
    const limited = await tg(api, TOKEN, 'sendMessage', { chat_id: 2, text: 'b' });
    expect(limited.status).toBe(429);
    await sleep(limited.body.parameters.retry_after * 1000);
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 2, text: 'b' })).status).toBe(200);
  });

  it('gives a correctly paced client zero 429s (private chat, scaled-down window)', async () => {
    await start({ privateChat: { count: 1, windowMs: 100 }, toleranceMs: 20 });
    for (let i = 0; i < 10; i++) {
      const r = await tg(api, TOKEN, 'sendMessage', { chat_id: 3, text: `m${i}` });
      expect(r.status).toBe(200);
      await sleep(100);
    }
    expect(sb.stats().rate_limited).toBe(0);
    // The same client without pacing is limited.
    const burst = await Promise.all([0, 1, 2].map((i) => tg(api, TOKEN, 'sendMessage', { chat_id: 3, text: `b${i}` })));
    expect(burst.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(1);
  });

  it("allows a burst of 30 per bot across chats (Telegram's 30/s by default), then limits", async () => {
    expect(DEFAULT_RATE_LIMITS.perBot).toEqual({ count: 30, windowMs: 1000, burst: 30 });
    // The same bucket stretched to a minute: 40 sends at once must not refill while they arrive,
    // however slow this machine is at the moment (at 30/1s a 300 ms stall let all 40 through).
    await start({ perBot: { count: 30, windowMs: 60_000 } });
    // 40 sends to 40 different chats at once: the first 30 (plus what refills while they arrive
    // and the jitter tolerance) pass, the rest are limited.
    const all = await Promise.all(
      Array.from({ length: 40 }, (_, i) => tg(api, TOKEN, 'sendMessage', { chat_id: 1000 + i, text: 'x' })),
    );
    const ok = all.filter((r) => r.status === 200).length;
    expect(ok).toBeGreaterThanOrEqual(30);
    expect(ok).toBeLessThan(40);
    expect(all.filter((r) => r.status === 429).length).toBe(40 - ok);
    expect(sb.sent(TOKEN)).toHaveLength(ok);
    // A second bot has its own budget.
    expect((await tg(api, '7:other-bot', 'sendMessage', { chat_id: 2000, text: 'x' })).status).toBe(200);
  });

  it('paces a bot-wide stream at 30/s without 429s', async () => {
    await start({ perBot: { count: 30, windowMs: 1000 } });
    const t0 = Date.now();
    for (let i = 0; i < 45; i++) {
      // A client spacing its sends by 1000/30 ms.
      const due = t0 + (i * 1000) / 30;
      if (due > Date.now()) await sleep(due - Date.now());
      const r = await tg(api, TOKEN, 'sendMessage', { chat_id: 5000 + i, text: 'x' });
      expect(r.status).toBe(200);
    }
    expect(sb.stats().rate_limited).toBe(0);
  });

  it('allows 20 messages per minute to a group, answering the 21st with retry_after', async () => {
    await start();
    for (let i = 0; i < 20; i++)
      expect((await tg(api, TOKEN, 'sendMessage', { chat_id: -55, text: `g${i}` })).status).toBe(200);
    const limited = await tg(api, TOKEN, 'sendMessage', { chat_id: -55, text: 'g20' });
    expect(limited.status).toBe(429);
    expect(limited.body.parameters.retry_after).toBe(3);
    expect(limited.headers.get('retry-after')).toBe('3');
  });

  it('can be reconfigured or turned off at runtime', async () => {
    await start();
    sb.setLimits({ enabled: false });
    for (let i = 0; i < 5; i++)
      expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 8, text: 'x' })).status).toBe(200);
    sb.setLimits({ enabled: true, privateChat: { count: 3, windowMs: 60_000 } });
    expect(sb.limits().privateChat).toEqual({ count: 3, windowMs: 60_000, burst: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await tg(api, TOKEN, 'sendMessage', { chat_id: 8, text: 'y' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('paces sends with allow_paid_broadcast by the paid bucket when one is set (per-chat limits still apply), else by the bot bucket', async () => {
    // minute-long windows: nothing refills while the sends arrive, however loaded the machine
    await start({ perBot: { count: 5, windowMs: 60_000 } });
    const send = (chat: number, paid: boolean) =>
      tg(api, TOKEN, 'sendMessage', { chat_id: chat, text: 'p', ...(paid ? { allow_paid_broadcast: true } : {}) });
    const burst = async (from: number, n: number, paid: boolean) => {
      const statuses = [];
      for (let i = 0; i < n; i++) statuses.push((await send(from + i, paid)).status);
      return statuses.filter((s) => s === 200).length;
    };
    // no paid bucket: the flag changes nothing (a bot Telegram has not enabled)
    expect(await burst(100, 8, true)).toBe(5);
    sb.setLimits({ paidBroadcast: { count: 20, windowMs: 60_000 } });
    expect(sb.limits().paidBroadcast).toEqual({ count: 20, windowMs: 60_000, burst: 20 });
    expect(await burst(200, 25, true)).toBe(20);
    // the free bucket is its own: unpaid sends still get their 5
    expect(await burst(300, 8, false)).toBe(5);
    expect(sb.sent(TOKEN).filter((m) => m.paid)).toHaveLength(25);
    // a paid send to a chat just written to is still limited per chat
    sb.setLimits({ paidBroadcast: { count: 100, windowMs: 60_000 } });
    expect((await send(400, true)).status).toBe(200);
    expect((await send(400, true)).status).toBe(429);
    sb.setLimits({ paidBroadcast: null });
    expect(sb.limits().paidBroadcast).toBeUndefined();
  });
});
