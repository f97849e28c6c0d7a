/** Fault injection: 5xx share, drop before (nothing happens), drop after (ambiguous send), latency, scoping. */
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { tg } from '../../support/sandbox-helpers';

const TOKEN = '8080:faults-secret';

async function outcome(p: Promise<{ status: number }>): Promise<number | 'dropped'> {
  try {
    return (await p).status;
  } catch {
    return 'dropped';
  }
}

describe('sandbox fault injection', () => {
  let sb: BotApiSandbox;
  let api: string;

  beforeEach(async () => {
    sb = createBotApiSandbox({ seed: 7, limits: { enabled: false } });
    api = await sb.start();
  });
  afterEach(async () => {
    await sb.stop();
  });

  it('answers a share of calls with 5xx without processing them', async () => {
    sb.setFaults({ serverErrorRate: 0.5, serverErrorStatus: 502 });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++)
      statuses.push((await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: `m${i}` })).status);
    const failed = statuses.filter((s) => s === 502).length;
    expect(failed).toBeGreaterThan(70);
    expect(failed).toBeLessThan(130);
    expect(statuses.filter((s) => s === 200).length).toBe(200 - failed);
    expect(sb.sent(TOKEN)).toHaveLength(200 - failed);
    expect(sb.stats().faults.server_error).toBe(failed);
    const r = await tg(api, TOKEN, 'getMe');
    if (r.status === 502) expect(r.body).toEqual({ ok: false, error_code: 502, description: 'Bad Gateway' });
  });

  it('is deterministic for a given seed', async () => {
    const run = async (): Promise<number[]> => {
      const s = createBotApiSandbox({ seed: 99, limits: { enabled: false } });
      const url = await s.start();
      s.setFaults({ serverErrorRate: 0.3, serverErrorStatus: 500 });
      const out = [];
      for (let i = 0; i < 30; i++) out.push((await tg(url, TOKEN, 'sendMessage', { chat_id: 1, text: 'x' })).status);
      await s.stop();
      return out;
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(a).toContain(500);
  });

  it('drop before: the connection dies and nothing is recorded', async () => {
    sb.setFaults({ dropBeforeRate: 1 });
    expect(await outcome(tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'lost' }))).toBe('dropped');
    expect(sb.sent(TOKEN)).toHaveLength(0);
    expect(sb.calls(TOKEN).map((c) => [c.method, c.outcome, c.status])).toEqual([['sendMessage', 'dropped_before', 0]]);
    // getUpdates dropped before processing confirms nothing.
    sb.injectMessage(TOKEN, { chatId: 1, text: 'u' });
    expect(await outcome(tg(api, TOKEN, 'getUpdates', { offset: 100001 }))).toBe('dropped');
    expect(sb.confirmedOffset(TOKEN)).toBeNull();
    expect(sb.pendingCount(TOKEN)).toBe(1);
  });

  it('drop after: the send IS recorded but the client gets no answer (ambiguous)', async () => {
    sb.setFaults({ dropAfterRate: 1, methods: ['sendMessage'] });
    expect(await outcome(tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'maybe' }))).toBe('dropped');
    expect(sb.sent(TOKEN).map((s) => s.text)).toEqual(['maybe']);
    expect(sb.calls(TOKEN, { method: 'sendMessage' })[0]).toMatchObject({ outcome: 'dropped_after', status: 0 });
    // Other methods are not affected.
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);
    expect(sb.stats().faults).toEqual({ server_error: 0, drop_before: 0, drop_after: 1 });
  });

  it('drop after on getUpdates: the offset is applied although the answer is lost', async () => {
    sb.injectMessages(TOKEN, 3, { chats: [1] });
    sb.setFaults({ methods: ['getUpdates'], sequence: ['drop_after'] });
    expect(await outcome(tg(api, TOKEN, 'getUpdates', { offset: 100001 }))).toBe('dropped');
    expect(sb.confirmedOffset(TOKEN)).toBe(100001);
    expect(sb.pendingCount(TOKEN)).toBe(2);
    // The sequence is used up: the next call is normal and returns the unconfirmed updates again.
    const again = await tg(api, TOKEN, 'getUpdates', { offset: 100001 });
    expect(again.body.result.map((u: { update_id: number }) => u.update_id)).toEqual([100001, 100002]);
  });

  it('plays a scripted sequence of outcomes for the matching methods', async () => {
    sb.setFaults({
      methods: ['sendMessage'],
      sequence: ['server_error', 'none', 'drop_before', 'drop_after'],
      serverErrorStatus: 500,
    });
    const got = [];
    for (let i = 0; i < 5; i++) got.push(await outcome(tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: `s${i}` })));
    expect(got).toEqual([500, 200, 'dropped', 'dropped', 200]);
    expect(sb.sent(TOKEN).map((s) => s.text)).toEqual(['s1', 's3', 's4']);
  });

  it('adds latency', async () => {
    sb.setFaults({ latencyMs: 200, methods: ['getMe'] });
    const t0 = Date.now();
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    const t1 = Date.now();
    await tg(api, TOKEN, 'getWebhookInfo');
    expect(Date.now() - t1).toBeLessThan(150);
  });

  it('applies per-bot faults over the global ones, and clears them', async () => {
    sb.setFaults({ serverErrorRate: 1 });
    sb.setFaults({ serverErrorRate: 0 }, TOKEN);
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);
    expect((await tg(api, '2:other', 'getMe')).status).toBe(502);
    sb.setFaults(null);
    expect((await tg(api, '2:other', 'getMe')).status).toBe(200);
    sb.setFaults({ dropBeforeRate: 1 }, TOKEN);
    expect(await outcome(tg(api, TOKEN, 'getMe'))).toBe('dropped');
    sb.setFaults(null, TOKEN);
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);
  });

  it('rejects invalid fault settings', () => {
    expect(() => sb.setFaults({ serverErrorRate: 2 })).toThrow(/between 0 and 1/);
    expect(() => sb.setFaults({ serverErrorStatus: 404 })).toThrow(/5xx/);
  });
});
