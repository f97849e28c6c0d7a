/** The `/sandbox/…` control API over HTTP, through the control client a separate process would use. */
import {
  createBotApiSandbox,
  createSandboxClient,
  SandboxControlError,
  type BotApiSandbox,
  type SandboxClient,
} from '../../../libs/sandbox';
import { tg } from '../../support/sandbox-helpers';

const TOKEN = '5050:control-secret';

describe('sandbox control API over HTTP', () => {
  let sb: BotApiSandbox;
  let api: string;
  let client: SandboxClient;

  beforeEach(async () => {
    sb = createBotApiSandbox({ limits: { enabled: false } });
    api = await sb.start();
    client = createSandboxClient(api);
  });
  afterEach(async () => {
    await sb.stop();
  });

  it('injects messages, bulk messages, callbacks and raw items', async () => {
    expect(await client.health()).toEqual({ status: 'ok' });
    const u = await client.injectMessage(TOKEN, { chatId: -77, text: '/start', chatType: 'supergroup', fromId: 9 });
    expect(u).toMatchObject({
      update_id: 100000,
      message: { text: '/start', chat: { id: -77, type: 'supergroup' }, from: { id: 9 } },
    });
    expect(await client.injectMessages(TOKEN, 4, { chats: 2, chatBase: 10, textPrefix: 'n' })).toEqual({
      count: 4,
      first_update_id: 100001,
      last_update_id: 100004,
    });
    const cb = await client.injectCallbackQuery(TOKEN, { chatId: 10, data: 'press' });
    expect(cb.callback_query).toMatchObject({ data: 'press' });
    expect(await client.injectRawUpdate(TOKEN, { weird: true })).toEqual({ slot: 100006 });
    expect(await client.injectRawUpdate(TOKEN, 'not json at all')).toEqual({ slot: 100007 });

    const body = await (await fetch(`${api}/bot${TOKEN}/getUpdates`)).text();
    expect(body).toContain('{"weird":true},not json at all]');
    const state = await client.botState(TOKEN);
    expect(state).toMatchObject({
      bot_id: 5050,
      pending_count: 8,
      confirmed_offset: null,
      next_update_id: 100008,
      webhook: null,
      long_poll_open: false,
    });
    await tg(api, TOKEN, 'getUpdates', { offset: 100003 });
    expect((await client.botState(TOKEN)).confirmed_offset).toBe(100003);

    // Telegram's update_id reset: refused while updates wait, then the next update gets the new id
    await expect(client.resetUpdateIds(TOKEN, 40)).rejects.toThrow(/queue is empty/);
    await tg(api, TOKEN, 'getUpdates', { offset: 100008 });
    expect(await client.resetUpdateIds(TOKEN, 40)).toBe(true);
    expect((await client.injectMessage(TOKEN, { chatId: 10, text: 'after the reset' })).update_id).toBe(40);
    await expect(client.resetUpdateIds(TOKEN, 0)).rejects.toThrow(/positive integer/);
  });

  it('reads sent messages, calls and stats', async () => {
    await tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'out' });
    await tg(api, TOKEN, 'getUpdates', { offset: 5 });
    expect((await client.sent(TOKEN)).map((s) => s.text)).toEqual(['out']);
    const calls = await client.calls(TOKEN, 'getUpdates');
    expect(calls.map((c) => c.params.offset)).toEqual([5]);
    expect((await client.calls()).length).toBe(2);
    const stats = await client.stats();
    expect(stats.by_method).toEqual({ sendMessage: 1, getUpdates: 1 });
  });

  it('sets faults, limits and scripted errors, revokes tokens and resets', async () => {
    await client.setFaults({ serverErrorRate: 1, methods: ['getMe'] });
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(502);
    await client.setFaults(null);
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);

    await client.setFaults({ sequence: ['drop_after'] }, TOKEN);
    await expect(tg(api, TOKEN, 'sendMessage', { chat_id: 1, text: 'x' })).rejects.toThrow();
    expect(await client.sent(TOKEN)).toHaveLength(1);

    const limits = await client.setLimits({ enabled: true, privateChat: { count: 1, windowMs: 60_000 } });
    expect(limits.enabled).toBe(true);
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 2, text: 'a' })).status).toBe(200);
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 2, text: 'b' })).status).toBe(429);

    await client.scriptChatError(TOKEN, 3, 'blocked');
    await client.scriptChatError(undefined, '@gone', { kind: 'chat_not_found' });
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: 3, text: 'x' })).status).toBe(403);
    expect((await tg(api, TOKEN, 'sendMessage', { chat_id: '@gone', text: 'x' })).body.description).toBe(
      'Bad Request: chat not found',
    );

    await client.revokeToken(TOKEN);
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(401);

    await client.reset();
    expect((await tg(api, TOKEN, 'getMe')).status).toBe(200);
    expect(await client.sent(TOKEN)).toEqual([]);
    expect((await client.stats()).calls).toBe(1);
    expect((await client.botState(TOKEN)).next_update_id).toBe(100000);
  });

  it('reports bad input and unknown routes clearly', async () => {
    await expect(client.injectMessage('', { chatId: 1, text: 'x' })).rejects.toThrow(/"token" is required/);
    await expect(client.injectMessage(TOKEN, { chatId: 'x' as unknown as number, text: 'x' })).rejects.toThrow(
      /"chatId" must be an integer/,
    );
    await expect(client.scriptChatError(TOKEN, 1, { kind: 'nope' } as never)).rejects.toThrow(
      /unknown scripted error kind/,
    );
    await expect(client.setFaults({ dropAfterRate: 5 })).rejects.toBeInstanceOf(SandboxControlError);
    const res = await fetch(`${api}/sandbox/nothing-here`);
    expect(res.status).toBe(404);
    await expect(createSandboxClient('http://127.0.0.1:1').health()).rejects.toThrow(/cannot reach the sandbox/);
  });
});
