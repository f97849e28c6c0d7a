/** getUpdates contract: offset confirmation, limit, long poll, 409 on overlap, raw items, auth. */
import { createBotApiSandbox, TG_DESCRIPTIONS, type BotApiSandbox } from '../../../libs/sandbox';
import { tg, updateIds } from '../../support/sandbox-helpers';
import { waitFor } from '../../support/wait-for';

const TOKEN = '4242:polling-secret';

describe('sandbox getUpdates', () => {
  let sb: BotApiSandbox;
  let api: string;

  beforeEach(async () => {
    sb = createBotApiSandbox({ firstUpdateId: 500 });
    api = await sb.start();
  });
  afterEach(async () => {
    await sb.stop();
  });

  it('keeps an update until a later call passes a higher offset, and records the confirmed offset', async () => {
    const u1 = sb.injectMessage(TOKEN, { chatId: 11, text: 'one' });
    const u2 = sb.injectMessage(TOKEN, { chatId: 11, text: 'two' });
    expect([u1.update_id, u2.update_id]).toEqual([500, 501]);

    const first = await tg(api, TOKEN, 'getUpdates', {});
    expect(first.status).toBe(200);
    expect(updateIds(first.body)).toEqual([500, 501]);
    expect(first.body.result[0].message).toMatchObject({
      text: 'one',
      chat: { id: 11, type: 'private' },
      from: { id: 11, is_bot: false },
    });

    // Reading again without an offset returns the same updates: nothing was confirmed.
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', {})).body)).toEqual([500, 501]);
    expect(sb.confirmedOffset(TOKEN)).toBeNull();
    expect(sb.pendingCount(TOKEN)).toBe(2);

    // offset = 501 confirms 500 only.
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 501 })).body)).toEqual([501]);
    expect(sb.confirmedOffset(TOKEN)).toBe(501);
    expect(sb.pendingCount(TOKEN)).toBe(1);

    // Asking from an earlier offset does not bring 500 back.
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 400 })).body)).toEqual([501]);
    expect(sb.confirmedOffset(TOKEN)).toBe(501);

    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 502 })).body)).toEqual([]);
    expect(sb.pendingCount(TOKEN)).toBe(0);
    expect(sb.confirmedOffset(TOKEN)).toBe(502);
    expect(sb.calls(TOKEN, { method: 'getUpdates' }).map((c) => c.params.offset)).toEqual([
      undefined,
      undefined,
      501,
      400,
      502,
    ]);
  });

  it('after an update_id reset, an offset past the queue is answered from its head and confirms nothing', async () => {
    sb.injectMessage(TOKEN, { chatId: 11, text: 'before' }); // 500
    await tg(api, TOKEN, 'getUpdates', {});
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 501 })).body)).toEqual([]);
    expect(() => sb.injectMessage(TOKEN, { chatId: 11, text: 'x' }) && sb.resetUpdateIds(TOKEN, 300)).toThrow(
      /queue is empty/,
    );
    await tg(api, TOKEN, 'getUpdates', { offset: 502 }); // confirms the 501 just injected
    sb.resetUpdateIds(TOKEN, 300);
    const reused = [1, 2, 3].map((i) => sb.injectMessage(TOKEN, { chatId: 11, text: `after ${i}` }).update_id);
    expect(reused).toEqual([300, 301, 302]);
    // the stored offset (502) lies past the queue: the head is served again and again, nothing confirmed
    for (let i = 0; i < 2; i++) {
      expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 502 })).body)).toEqual([300, 301, 302]);
      expect(sb.pendingCount(TOKEN)).toBe(3);
    }
    // an offset that follows what was served confirms it
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 302 })).body)).toEqual([302]);
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { offset: 303 })).body)).toEqual([]);
    expect(sb.pendingCount(TOKEN)).toBe(0);
  });

  it('numbers update_ids per bot, starting at firstUpdateId', async () => {
    const other = '777:other-secret';
    expect(sb.injectMessage(TOKEN, { chatId: 1, text: 'a' }).update_id).toBe(500);
    expect(sb.injectMessage(other, { chatId: 1, text: 'b' }).update_id).toBe(500);
    expect(sb.injectMessage(TOKEN, { chatId: 2, text: 'c' }).update_id).toBe(501);
    expect(updateIds((await tg(api, other, 'getUpdates')).body)).toEqual([500]);
  });

  it('clamps limit to 1..100 with default 100', async () => {
    const r = sb.injectMessages(TOKEN, 150, { chats: [1, 2, 3] });
    expect(r).toEqual({ count: 150, first_update_id: 500, last_update_id: 649 });
    expect((await tg(api, TOKEN, 'getUpdates')).body.result).toHaveLength(100);
    expect((await tg(api, TOKEN, 'getUpdates', { limit: 1000 })).body.result).toHaveLength(100);
    expect((await tg(api, TOKEN, 'getUpdates', { limit: 0 })).body.result).toHaveLength(1);
    expect((await tg(api, TOKEN, 'getUpdates', { limit: -5 })).body.result).toHaveLength(1);
    expect(updateIds((await tg(api, TOKEN, 'getUpdates', { limit: 3, offset: 600 })).body)).toEqual([600, 601, 602]);
  });

  it('injects 50,000 messages quickly', async () => {
    const t0 = Date.now();
    const r = sb.injectMessages(TOKEN, 50_000, { chats: 1000, textPrefix: 'bulk ' });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.count).toBe(50_000);
    expect(sb.pendingCount(TOKEN)).toBe(50_000);
    const page = await tg(api, TOKEN, 'getUpdates', { offset: 500 + 49_990 });
    expect(page.body.result).toHaveLength(10);
    expect(page.body.result[9].message.text).toBe('bulk 49999');
    expect(sb.pendingCount(TOKEN)).toBe(10);
  });

  it('long poll returns as soon as an update arrives', async () => {
    const t0 = Date.now();
    const pending = tg(api, TOKEN, 'getUpdates', { timeout: 5 });
    setTimeout(() => sb.injectMessage(TOKEN, { chatId: 5, text: 'wake up' }), 150);
    const res = await pending;
    const elapsed = Date.now() - t0;
    expect(res.status).toBe(200);
    expect(res.body.result.map((u: { message: { text: string } }) => u.message.text)).toEqual(['wake up']);
    expect(elapsed).toBeGreaterThanOrEqual(100);
    expect(elapsed).toBeLessThan(2000);
  });

  it('long poll answers [] after the timeout when nothing arrives', async () => {
    const t0 = Date.now();
    const res = await tg(api, TOKEN, 'getUpdates', { timeout: 1 });
    const elapsed = Date.now() - t0;
    expect(res.body).toEqual({ ok: true, result: [] });
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(2500);
  });

  it('a newer getUpdates terminates the pending older one with 409', async () => {
    const older = tg(api, TOKEN, 'getUpdates', { timeout: 10 });
    await new Promise((r) => setTimeout(r, 100));
    const newer = tg(api, TOKEN, 'getUpdates', { timeout: 1 });
    const o = await older;
    expect(o.status).toBe(409);
    expect(o.body).toEqual({ ok: false, error_code: 409, description: TG_DESCRIPTIONS.conflictPolling });
    expect(o.body.description).toBe(
      'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
    );
    sb.injectMessage(TOKEN, { chatId: 3, text: 'for the newer one' });
    const n = await newer;
    expect(n.status).toBe(200);
    expect(n.body.result).toHaveLength(1);
  });

  it('a client that disconnects during a long poll leaves no pending poll behind', async () => {
    const ac = new AbortController();
    const p = tg(api, TOKEN, 'getUpdates', { timeout: 10 }, { signal: ac.signal }).then(
      () => 'answered',
      (e: Error) => e.name,
    );
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    expect(await p).toBe('AbortError');
    await waitFor(() => sb.calls(TOKEN).some((c) => c.outcome === 'client_closed'), { what: 'client_closed record' });
    // The next poll proceeds normally (no 409 for anybody).
    sb.injectMessage(TOKEN, { chatId: 1, text: 'x' });
    const res = await tg(api, TOKEN, 'getUpdates', { timeout: 1 });
    expect(res.status).toBe(200);
    expect(res.body.result).toHaveLength(1);
  });

  it('negative offset keeps only the last -offset updates', async () => {
    sb.injectMessages(TOKEN, 5, { chats: [1] });
    const res = await tg(api, TOKEN, 'getUpdates', { offset: -2 });
    expect(updateIds(res.body)).toEqual([503, 504]);
    expect(sb.pendingCount(TOKEN)).toBe(2);
  });

  it('accepts form-encoded bodies, query strings and GET', async () => {
    sb.injectMessages(TOKEN, 3, { chats: [1] });
    const form = await fetch(`${api}/bot${TOKEN}/getUpdates`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'offset=501&limit=1',
    });
    expect(updateIds(await form.json())).toEqual([501]);
    const get = await fetch(`${api}/bot${TOKEN}/getUpdates?offset=502`);
    expect(updateIds(await get.json())).toEqual([502]);
    expect(sb.confirmedOffset(TOKEN)).toBe(502);
    const me = await (await fetch(`${api}/bot${TOKEN}/getMe`)).json();
    expect(me).toEqual({
      ok: true,
      result: expect.objectContaining({ id: 4242, is_bot: true, username: 'sandbox_4242_bot' }),
    });
  });

  it('allowed_updates filters update types created afterwards', async () => {
    await tg(api, TOKEN, 'getUpdates', { allowed_updates: ['callback_query'] });
    sb.injectMessage(TOKEN, { chatId: 1, text: 'ignored' });
    sb.injectCallbackQuery(TOKEN, { chatId: 1, data: 'kept' });
    const res = await tg(api, TOKEN, 'getUpdates');
    expect(res.body.result).toHaveLength(1);
    expect(res.body.result[0].callback_query.data).toBe('kept');
  });

  it('delivers raw items verbatim; each occupies the next update_id slot', async () => {
    sb.injectMessage(TOKEN, { chatId: 1, text: 'good' }); // 500
    expect(sb.injectRawUpdate(TOKEN, { message: { text: 'no update_id' } })).toEqual({ slot: 501 });
    expect(sb.injectRawUpdate(TOKEN, { update_id: 'x', message: 5 })).toEqual({ slot: 502 });
    sb.injectMessage(TOKEN, { chatId: 1, text: 'after' }); // 503
    const res = await tg(api, TOKEN, 'getUpdates');
    expect(res.body.result).toEqual([
      expect.objectContaining({ update_id: 500 }),
      { message: { text: 'no update_id' } },
      { update_id: 'x', message: 5 },
      expect.objectContaining({ update_id: 503 }),
    ]);
    // offset 502 confirms the good update and the first raw item (slot 501) but not slot 502.
    const next = await tg(api, TOKEN, 'getUpdates', { offset: 502 });
    expect(next.body.result).toEqual([{ update_id: 'x', message: 5 }, expect.objectContaining({ update_id: 503 })]);
  });

  it('splices raw non-JSON text into the response as is', async () => {
    expect(sb.injectRawUpdate(TOKEN, '{not json')).toEqual({ slot: 500 });
    const res = await tg(api, TOKEN, 'getUpdates');
    expect(res.status).toBe(200);
    expect(res.body).toBe('{"ok":true,"result":[{not json]}');
    await tg(api, TOKEN, 'getUpdates', { offset: 501 });
    expect(sb.pendingCount(TOKEN)).toBe(0);
  });

  it('answers 401 for malformed, wrong-secret and revoked tokens, 404 for unknown methods', async () => {
    const unauthorized = { ok: false, error_code: 401, description: 'Unauthorized' };
    const bad = await tg(api, 'not-a-token', 'getMe');
    expect([bad.status, bad.body]).toEqual([401, unauthorized]);
    await tg(api, TOKEN, 'getMe');
    const wrong = await tg(api, '4242:another-secret', 'getMe');
    expect([wrong.status, wrong.body]).toEqual([401, unauthorized]);
    sb.revokeToken(TOKEN);
    const revoked = await tg(api, TOKEN, 'getUpdates');
    expect([revoked.status, revoked.body]).toEqual([401, unauthorized]);
    const unknown = await tg(api, '5:five', 'sendTelepathy');
    expect([unknown.status, unknown.body]).toEqual([404, { ok: false, error_code: 404, description: 'Not Found' }]);
    // Method names are case-insensitive, as in Telegram.
    expect((await tg(api, '5:five', 'GETME')).status).toBe(200);
  });

  it('never records the token, only the bot id', async () => {
    await tg(api, TOKEN, 'getUpdates', { offset: 3 });
    await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'hi' });
    const records = JSON.stringify(sb.calls());
    expect(records).not.toContain('polling-secret');
    expect(sb.calls(TOKEN).every((c) => c.bot_id === 4242)).toBe(true);
  });
});
