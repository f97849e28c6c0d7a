/**
 * The Bot API envelope read in one place: the client's rules (Telegram's fields as typed, the HTTP
 * status when they are missing) and the lenient rules the poller applies to a 2xx error envelope.
 */
import {
  botApiError,
  ErrorEnvelopeRules,
  readBotApiAnswer,
  TelegramApiError,
  TelegramNetworkError,
} from '../../../libs/telegram';

const LENIENT: ErrorEnvelopeRules = { errorCode: 500, description: 'ok is not true', coerce: true };

describe('readBotApiAnswer', () => {
  it('returns `result` of an ok answer', () => {
    expect(readBotApiAnswer('getMe', { status: 200, body: '{"ok":true,"result":{"id":1}}' })).toEqual({ id: 1 });
  });

  it('a 2xx body that is not JSON is a bad_response network error with the parse error as cause', () => {
    const e = (() => {
      try {
        readBotApiAnswer('getMe', { status: 200, body: '<html>' });
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(TelegramNetworkError);
    expect(e).toMatchObject({
      reason: 'bad_response',
      requestSent: true,
      message: 'Telegram getMe: HTTP 200 answer is not JSON',
    });
    expect((e as Error).cause).toMatchObject({ name: 'SyntaxError' }); // scrubbed of any token, name kept
  });

  it('ok not true (2xx or not) is a TelegramApiError whose missing fields come from the status', () => {
    expect(() => readBotApiAnswer('x', { status: 200, body: '{"ok":false}' })).toThrow(
      expect.objectContaining({ errorCode: 200, description: 'HTTP 200 OK' }),
    );
    expect(() => readBotApiAnswer('x', { status: 200, body: 'null' })).toThrow(TelegramApiError);
    expect(() =>
      readBotApiAnswer('x', {
        status: 429,
        body: '{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":7}}',
        retryAfterHeader: 3,
      }),
    ).toThrow(expect.objectContaining({ errorCode: 429, retryAfter: 7 }));
  });
});

describe('botApiError', () => {
  it("client rules: only a number and a string count; else the HTTP status's", () => {
    const e = botApiError('x', { status: 502, body: '{"error_code":"409","description":7}' });
    expect(e).toMatchObject({ errorCode: 502, description: 'HTTP 502 Bad Gateway', parameters: {} });
    expect(botApiError('x', { status: 502, body: '<html>', retryAfterHeader: 4 })).toMatchObject({
      errorCode: 502,
      retryAfter: 4,
    });
    expect(botApiError('x', { status: 400, body: '{"error_code":0}' }).errorCode).toBe(0);
  });

  it('lenient rules: primitives are coerced, 0 and non-numbers fall back, objects are not stringified', () => {
    expect(
      botApiError('getUpdates', { status: 200, body: '{"ok":false,"error_code":"409","description":7}' }, LENIENT),
    ).toMatchObject({
      errorCode: 409,
      description: '7',
    });
    expect(
      botApiError('getUpdates', { status: 200, body: '{"ok":false,"error_code":0,"description":{}}' }, LENIENT),
    ).toMatchObject({
      errorCode: 500,
      description: 'ok is not true',
    });
    expect(botApiError('getUpdates', { status: 200, body: '{"ok":false,"x":nope}' }, LENIENT)).toMatchObject({
      errorCode: 500,
      description: 'ok is not true',
    });
    expect(
      botApiError(
        'getUpdates',
        { status: 200, body: '{"ok":false,"error_code":400,"parameters":{"migrate_to_chat_id":-1}}' },
        LENIENT,
      ),
    ).toMatchObject({ errorCode: 400, migrateToChatId: -1 });
  });
});
