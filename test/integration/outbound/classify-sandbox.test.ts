/** Every classification row of sendMessage, against the sandbox Bot API over real HTTP. */
import net from 'node:net';
import { sendOutbound, OutboundRow, SendOutcome } from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../../libs/telegram';

const SECRET = 'classify-secret-0123456789abcdef';
const TOKEN = `7070:${SECRET}`;

function row(chat: string | number, over: Partial<OutboundRow> = {}): OutboundRow {
  return {
    id: '1',
    msg_id: 'm',
    bot_id: '7070',
    chat_id: String(chat),
    target_chat_id: String(chat),
    text: 'hello <b>world</b>',
    parse_mode: 'HTML',
    disable_notification: false,
    reply_markup: null,
    send_options: null,
    kind: 'message',
    delivery: 'at_least_once',
    attempts: 1,
    max_attempts: null,
    ...over,
  };
}

describe('sendMessage classification against the sandbox', () => {
  let sb: BotApiSandbox;
  let client: BotApiClient;
  const outcomes: SendOutcome[] = [];
  const send = async (r: OutboundRow, c = client, timeoutMs = 5_000) => {
    const o = await sendOutbound(c, r, timeoutMs);
    outcomes.push(o);
    return o;
  };

  beforeAll(async () => {
    sb = createBotApiSandbox({ seed: 1 });
    client = createBotApiClient({ token: TOKEN, apiRoot: await sb.start() });
  });
  afterAll(async () => {
    client.close();
    await sb.stop();
    // the token never reaches an outcome (they go to audit rows and logs)
    expect(JSON.stringify(outcomes)).not.toContain(SECRET);
  });
  beforeEach(() => sb.setFaults(null));

  it("200 → Delivered with Telegram's message_id", async () => {
    const o = await send(row(101));
    const sent = sb.sent(TOKEN).filter((m) => m.chat_id === 101);
    expect(sent).toHaveLength(1);
    expect(o).toEqual({
      type: 'delivered',
      messageId: sent[0].message_id,
      messageIds: [sent[0].message_id],
      status: 200,
    });
    expect(sent[0]).toMatchObject({ text: 'hello <b>world</b>', parse_mode: 'HTML' });
  });

  it('429 → RateLimited after parameters.retry_after (the sandbox enforces 1/s per chat)', async () => {
    expect((await send(row(102))).type).toBe('delivered');
    expect(await send(row(102))).toEqual({
      type: 'rate_limited',
      retryAfterMs: 1000,
      status: 429,
      description: 'Too Many Requests: retry after 1',
    });
  });

  it('400 with migrate_to_chat_id → Migrate', async () => {
    sb.scriptChatError(TOKEN, -103, { kind: 'migrated', migrateToChatId: -1000000000103 });
    expect(await send(row(-103))).toEqual({
      type: 'migrate',
      newChatId: '-1000000000103',
      status: 400,
      description: 'Bad Request: group chat was upgraded to a supergroup chat',
    });
  });

  it("400 and 403 → Terminal with the description; 401 (a revoked token) → Config, not the message's fault", async () => {
    sb.scriptChatError(TOKEN, 104, 'chat_not_found');
    expect(await send(row(104))).toEqual({
      type: 'terminal',
      reason: 'Bad Request: chat not found',
      status: 400,
      errorCode: 'TELEGRAM_400',
      chatStatus: 'chat_not_found',
    });
    sb.scriptChatError(TOKEN, 105, 'blocked');
    expect(await send(row(105))).toEqual({
      type: 'terminal',
      reason: 'Forbidden: bot was blocked by the user',
      status: 403,
      errorCode: 'TELEGRAM_403',
      chatStatus: 'blocked',
    });
    expect(await send(row(106, { text: 'x'.repeat(5000) }))).toMatchObject({
      type: 'terminal',
      status: 400,
      reason: 'Bad Request: message is too long',
    });
    const revoked = `7071:${SECRET}`;
    const c2 = createBotApiClient({ token: revoked, apiRoot: sb.url });
    sb.revokeToken(revoked);
    expect(await send(row(107), c2)).toMatchObject({
      type: 'config',
      status: 401,
      errorCode: 'TELEGRAM_401',
      reason: expect.stringMatching(
        /^Bot API answered 401 to sendMessage \(Unauthorized\): the bot token is not accepted/,
      ),
    });
    c2.close();
  });

  it('5xx → Retry, and nothing was sent', async () => {
    sb.setFaults({ sequence: ['server_error'], serverErrorStatus: 502 });
    expect(await send(row(108))).toEqual({ type: 'retry', status: 502, errorCode: 'HTTP_502', error: 'Bad Gateway' });
    expect(sb.sent(TOKEN).filter((m) => m.chat_id === 108)).toHaveLength(0);
  });

  it('connection dropped after the request was written → Ambiguous (here Telegram did send it)', async () => {
    sb.setFaults({ sequence: ['drop_after'] });
    expect(await send(row(109))).toMatchObject({ type: 'ambiguous' });
    expect(sb.sent(TOKEN).filter((m) => m.chat_id === 109)).toHaveLength(1);
  });

  it('connection dropped before processing → also Ambiguous: from our side it is indistinguishable', async () => {
    sb.setFaults({ sequence: ['drop_before'] });
    expect(await send(row(110))).toMatchObject({ type: 'ambiguous' });
    expect(sb.sent(TOKEN).filter((m) => m.chat_id === 110)).toHaveLength(0);
  });

  it('timeout after the request was written → Ambiguous (ETIMEDOUT)', async () => {
    sb.setFaults({ latencyMs: 400, methods: ['sendMessage'] });
    expect(await send(row(111), client, 100)).toMatchObject({ type: 'ambiguous', errorCode: 'ETIMEDOUT' });
    sb.setFaults(null);
  });

  it('connection refused and DNS failure → Retry (the request never left)', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const refused = createBotApiClient({ token: TOKEN, apiRoot: `http://127.0.0.1:${port}` });
    expect(await send(row(112), refused)).toMatchObject({ type: 'retry', errorCode: 'ECONNREFUSED' });
    refused.close();
    const dns = createBotApiClient({ token: TOKEN, apiRoot: 'http://tg-relay-no-such-host.invalid' });
    expect(await send(row(113), dns)).toMatchObject({
      type: 'retry',
      errorCode: expect.stringMatching(/^E(NOTFOUND|AI_AGAIN)$/),
    });
    dns.close();
  });
});
