import fc from 'fast-check';
import {
  classifySendError,
  classifySendSuccess,
  RATE_LIMIT_FALLBACK_MS,
  RATE_LIMIT_MIN_MS,
} from '../../../libs/outbound/classify-response';
import { TelegramApiError, TelegramNetworkError } from '../../../libs/telegram/errors';

const api = (errorCode: number, description: string, parameters?: Record<string, number>, retryAfterHeader?: number) =>
  new TelegramApiError('sendMessage', { errorCode, description, parameters, retryAfterHeader });
const net = (reason: TelegramNetworkError['reason'], sent: boolean, code?: string) =>
  new TelegramNetworkError(
    'sendMessage',
    reason,
    'socket hang up',
    sent,
    code ? { cause: Object.assign(new Error('x'), { code }) } : undefined,
  );

describe('sendMessage classification', () => {
  it('ok with a message_id → Delivered(message_id)', () => {
    expect(classifySendSuccess({ message_id: 77, chat: { id: 1 } })).toEqual({
      type: 'delivered',
      messageId: 77,
      messageIds: [77],
      status: 200,
    });
  });

  it('other methods: Message[], MessageId[] and true results; expired answers are terminal', () => {
    expect(classifySendSuccess([{ message_id: 5 }, { message_id: 6 }], 200, 'sendMediaGroup')).toMatchObject({
      type: 'delivered',
      messageId: 5,
      messageIds: [5, 6],
    });
    expect(classifySendSuccess({ message_id: 9 }, 200, 'copyMessage')).toMatchObject({ messageIds: [9] });
    expect(classifySendSuccess(true, 200, 'editMessageText')).toEqual({
      type: 'delivered',
      messageIds: [],
      status: 200,
    });
    expect(classifySendSuccess(true, 200, 'answerCallbackQuery')).toMatchObject({ type: 'delivered' });
    expect(classifySendSuccess(true, 200, 'sendPhoto')).toMatchObject({ type: 'ambiguous' });
    const expired = new TelegramApiError('answerCallbackQuery', {
      errorCode: 400,
      description: 'Bad Request: query is too old and response timeout expired or query ID is invalid',
    });
    expect(classifySendError(expired, 'answerCallbackQuery')).toMatchObject({
      type: 'terminal',
      errorCode: 'RELAY_QUERY_EXPIRED',
    });
    expect(classifySendError(expired, 'sendMessage')).toMatchObject({ type: 'terminal', errorCode: 'TELEGRAM_400' });
  });

  it('a refusal saying the effect is already there is Delivered: an edit not modified, a repeated delete of a gone message', () => {
    const notModified = api(
      400,
      'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
    );
    for (const method of ['editMessageText', 'editMessageCaption', 'editMessageReplyMarkup'])
      expect(classifySendError(notModified, method)).toEqual({ type: 'delivered', messageIds: [], status: 400 });
    const gone = api(400, 'Bad Request: message to delete not found');
    expect(classifySendError(gone, 'deleteMessage', { repeat: true })).toMatchObject({ type: 'delivered' });
    // a first attempt has nothing to explain it: a wrong message id stays a failure
    expect(classifySendError(gone, 'deleteMessage')).toMatchObject({ type: 'terminal', errorCode: 'TELEGRAM_400' });
    // only those descriptions, only for those methods
    expect(classifySendError(notModified, 'sendMessage', { repeat: true })).toMatchObject({ type: 'terminal' });
    expect(classifySendError(gone, 'editMessageText', { repeat: true })).toMatchObject({ type: 'terminal' });
    expect(
      classifySendError(api(400, 'Bad Request: message to edit not found'), 'editMessageText', { repeat: true }),
    ).toMatchObject({ type: 'terminal' });
  });

  it('an edit answered "message is not modified" is delivered (an earlier ambiguous attempt went through); a send is not', () => {
    const notModified = (method: string) =>
      new TelegramApiError(method, {
        errorCode: 400,
        description:
          'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
      });
    for (const method of ['editMessageText', 'editMessageCaption', 'editMessageReplyMarkup', 'editMessageMedia'])
      expect(classifySendError(notModified(method), method)).toEqual({
        type: 'delivered',
        messageIds: [],
        status: 400,
      });
    expect(classifySendError(notModified('sendMessage'), 'sendMessage')).toMatchObject({
      type: 'terminal',
      errorCode: 'TELEGRAM_400',
    });
    expect(classifySendError(api(400, 'Bad Request: message to edit not found'), 'editMessageText')).toMatchObject({
      type: 'terminal',
    });
  });

  it('ok without a message_id → Ambiguous (Telegram may have sent it)', () => {
    expect(classifySendSuccess(true)).toMatchObject({ type: 'ambiguous', errorCode: 'BAD_RESPONSE' });
  });

  it('429 → RateLimited after parameters.retry_after, else the Retry-After header, else a fallback', () => {
    expect(classifySendError(api(429, 'Too Many Requests: retry after 7', { retry_after: 7 }, 9))).toEqual({
      type: 'rate_limited',
      retryAfterMs: 7000,
      status: 429,
      description: 'Too Many Requests: retry after 7',
    });
    expect(classifySendError(api(429, 'Too Many Requests', undefined, 3))).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: 3000,
    });
    expect(classifySendError(api(429, 'Too Many Requests'))).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: RATE_LIMIT_FALLBACK_MS,
    });
  });

  it('429 asking for less than a second (0, a fraction: a proxy or a self-hosted Bot API) waits a second, never 0', () => {
    expect(classifySendError(api(429, 'Too Many Requests: retry after 0', { retry_after: 0 }))).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: 1000,
    });
    expect(classifySendError(api(429, 'Too Many Requests', undefined, 0))).toMatchObject({
      type: 'rate_limited',
      retryAfterMs: 1000,
    });
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e6, noNaN: true }), fc.boolean(), (s, inHeader) => {
        const out = classifySendError(
          inHeader ? api(429, 'Too Many Requests', undefined, s) : api(429, 'Too Many Requests', { retry_after: s }),
        );
        // Telegram's own value when it is a second or more, else the floor
        return out.type === 'rate_limited' && out.retryAfterMs === (s >= 1 ? s * 1000 : RATE_LIMIT_MIN_MS);
      }),
    );
  });

  it('400 with migrate_to_chat_id → Migrate(new chat id)', () => {
    expect(
      classifySendError(
        api(400, 'Bad Request: group chat was upgraded to a supergroup chat', { migrate_to_chat_id: -1009876 }),
      ),
    ).toEqual({
      type: 'migrate',
      newChatId: '-1009876',
      status: 400,
      description: 'Bad Request: group chat was upgraded to a supergroup chat',
    });
  });

  it("400, 403 → Terminal with Telegram's description; 401, 404 → Config (the token or API root is wrong, not the message)", () => {
    expect(classifySendError(api(400, 'Bad Request: chat not found'))).toEqual({
      type: 'terminal',
      reason: 'Bad Request: chat not found',
      status: 400,
      errorCode: 'TELEGRAM_400',
      chatStatus: 'chat_not_found',
    });
    expect(classifySendError(api(401, 'Unauthorized'))).toMatchObject({
      type: 'config',
      status: 401,
      errorCode: 'TELEGRAM_401',
      reason: expect.stringContaining('TELEGRAM_BOT_TOKEN'),
    });
    expect(classifySendError(api(403, 'Forbidden: bot was blocked by the user'))).toMatchObject({
      type: 'terminal',
      status: 403,
      reason: 'Forbidden: bot was blocked by the user',
    });
    expect(classifySendError(api(404, 'Not Found'))).toMatchObject({
      type: 'config',
      status: 404,
      errorCode: 'TELEGRAM_404',
      reason: expect.stringContaining('TELEGRAM_API_ROOT'),
    });
  });

  it('a refusal saying the chat cannot be reached names its status; the same words elsewhere do not', () => {
    const cases: [number, string, string | undefined][] = [
      [403, 'Forbidden: bot was blocked by the user', 'blocked'],
      [403, 'Forbidden: user is deactivated', 'deactivated'],
      [403, 'Forbidden: bot was kicked from the group chat', 'kicked'],
      [403, 'Forbidden: bot was kicked from the supergroup chat', 'kicked'],
      [403, 'Forbidden: bot was kicked from the channel chat', 'kicked'],
      [400, 'Bad Request: chat not found', 'chat_not_found'],
      [403, "Forbidden: bot can't initiate conversation with a user", undefined],
      [400, 'Bad Request: bot was blocked by the user', undefined], // the status code must match too
      [400, 'Bad Request: message is too long', undefined],
    ];
    for (const [code, description, status] of cases)
      expect([description, (classifySendError(api(code, description)) as { chatStatus?: string }).chatStatus]).toEqual([
        description,
        status,
      ]);
    // an answer to a query belongs to no chat
    const answer = new TelegramApiError('answerCallbackQuery', {
      errorCode: 400,
      description: 'Bad Request: chat not found',
    });
    expect(classifySendError(answer, 'answerCallbackQuery')).not.toHaveProperty('chatStatus');
  });

  it('5xx → Retry with backoff', () => {
    expect(classifySendError(api(502, 'Bad Gateway'))).toEqual({
      type: 'retry',
      status: 502,
      errorCode: 'HTTP_502',
      error: 'Bad Gateway',
    });
    expect(classifySendError(api(500, 'Internal Server Error'))).toMatchObject({ type: 'retry', status: 500 });
  });

  it('no answer before the request was written (refused, DNS) → Retry', () => {
    expect(classifySendError(net('connection', false, 'ECONNREFUSED'))).toMatchObject({
      type: 'retry',
      errorCode: 'ECONNREFUSED',
    });
    expect(classifySendError(net('connection', false, 'ENOTFOUND'))).toMatchObject({
      type: 'retry',
      errorCode: 'ENOTFOUND',
    });
  });

  it('no answer after the request was written (dropped, timed out) → Ambiguous', () => {
    expect(classifySendError(net('connection', true, 'ECONNRESET'))).toMatchObject({
      type: 'ambiguous',
      errorCode: 'ECONNRESET',
    });
    expect(classifySendError(net('timeout', true))).toMatchObject({ type: 'ambiguous', errorCode: 'ETIMEDOUT' });
    expect(classifySendError(net('bad_response', true))).toMatchObject({
      type: 'ambiguous',
      errorCode: 'BAD_RESPONSE',
    });
    expect(classifySendError(net('timeout', false))).toMatchObject({ type: 'retry', errorCode: 'ETIMEDOUT' });
  });

  it('never lets a token through into the outcome', () => {
    const out = classifySendError(
      new Error('request to https://api.telegram.org/bot123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAA/sendMessage failed'),
    );
    expect(out).toMatchObject({ type: 'retry', errorCode: 'RELAY_SEND_THREW' });
    expect(JSON.stringify(out)).not.toContain('AAAAAAAAAAAAAAAAAAAA');
  });
});
