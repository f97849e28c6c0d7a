/** The seed's TelegramOutbound contract as the bridge reads it (no NATS, no database). */
import fc from 'fast-check';
import { decodeTelegramOutbound } from '../../../libs/jetstream/contract';
import { messageFault, nakDelayMs, NAK_BACKOFF_MAX_MS } from '../../../libs/jetstream/ingest';
import { isUnstorable } from '../../../libs/db/storable-json';
import { seedStreamConfig } from '../../../libs/jetstream/bridge';
import { describeConfig, loadConfig } from '../../../libs/config';

const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));

describe('decodeTelegramOutbound', () => {
  it("refuses a msg_id in the relay's alert namespace (alert:), naming the field", () => {
    expect(decodeTelegramOutbound(enc({ msg_id: 'alert:x', chat_id: 1, text: 't' }))).toMatchObject({
      ok: false,
      reason: 'invalid',
      error: expect.stringMatching(/^msg_id: must not start with "alert:"/),
      msgId: 'alert:x',
    });
  });

  it('takes lane (default interactive, or bulk); another value is a violation naming lane', () => {
    const lane = (v: unknown) => decodeTelegramOutbound(enc({ msg_id: 'l', chat_id: 1, text: 't', lane: v }));
    expect(lane(undefined)).toMatchObject({ ok: true, message: { lane: 'interactive' } });
    expect(lane('bulk')).toMatchObject({ ok: true, message: { lane: 'bulk' } });
    expect(lane('express')).toMatchObject({
      ok: false,
      reason: 'invalid',
      error: 'lane: must be one of interactive, bulk',
    });
  });

  it('reads the seed example: chat null → default chat, parse_mode passed on, kind kept as publisher kind', () => {
    const d = decodeTelegramOutbound(
      enc({
        msg_id: 'cohort|1234|signal_id',
        chat: null,
        text: '<b>Signal</b>: BUY at 0.45',
        parse_mode: 'HTML',
        kind: 'trade',
      }),
    );
    expect(d).toEqual({
      ok: true,
      publisherKind: 'trade',
      message: expect.objectContaining({
        msgId: 'cohort|1234|signal_id',
        chatId: null,
        text: '<b>Signal</b>: BUY at 0.45',
        parseMode: 'HTML',
        kind: 'message',
      }),
    });
  });

  it('accepts chat_id or the seed field chat (numbers or strings), refuses both when they differ', () => {
    expect(decodeTelegramOutbound(enc({ msg_id: 'a', chat_id: -100123, text: 't' }))).toMatchObject({
      ok: true,
      message: { chatId: '-100123' },
    });
    expect(decodeTelegramOutbound(enc({ msg_id: 'a', chat: '@some_channel', text: 't' }))).toMatchObject({
      ok: true,
      message: { chatId: '@some_channel' },
    });
    expect(decodeTelegramOutbound(enc({ msg_id: 'a', chat: '5', chat_id: 5, text: 't' }))).toMatchObject({
      ok: true,
      message: { chatId: '5' },
    });
    expect(decodeTelegramOutbound(enc({ msg_id: 'a', chat: '5', chat_id: 6, text: 't' }))).toMatchObject({
      ok: false,
      reason: 'invalid',
      error: expect.stringMatching(/chat and chat_id/),
    });
  });

  it('names every problem, with the msg_id when there is one', () => {
    const d = decodeTelegramOutbound(enc({ msg_id: 'm-1', text: '', parse_mode: 'RTF', kind: 42 }));
    expect(d).toMatchObject({ ok: false, reason: 'invalid', msgId: 'm-1' });
    if (d.ok) throw new Error('unreachable');
    expect(d.error).toMatch(/kind: /);
    expect(d.error).toMatch(/text: /);
    expect(d.error).toMatch(/parse_mode: /);
  });

  it('a relayed method other than sendMessage: method and params on the message, no text', () => {
    const params = { photo: 'https://example.com/a.jpg', caption: '<b>hi</b>', parse_mode: 'HTML' };
    expect(
      decodeTelegramOutbound(enc({ msg_id: 'p1', chat_id: 42, method: 'sendPhoto', params, kind: 'chart' })),
    ).toEqual({
      ok: true,
      publisherKind: 'chart',
      message: expect.objectContaining({ msgId: 'p1', chatId: '42', method: 'sendPhoto', params, text: null }),
    });
    // a message without a method is a sendMessage, as before
    expect(decodeTelegramOutbound(enc({ msg_id: 'p2', text: 't' }))).toMatchObject({
      ok: true,
      message: { method: 'sendMessage', params: null, text: 't' },
    });
  });

  it.each([
    ['an unknown method', { method: 'sendTelepathy', params: {} }, /^method: /],
    ['a direct method', { method: 'getMe', params: {} }, /^method: /],
    ['a sendPhoto without a photo', { method: 'sendPhoto', params: { caption: 'c' } }, /params\.photo: is required/],
    [
      'a sendPhoto with text',
      { method: 'sendPhoto', text: 't', params: { photo: 'u' } },
      /text: is a sendMessage field/,
    ],
    ['params on a sendMessage', { text: 't', params: { a: 1 } }, /params: is for methods other than sendMessage/],
    [
      'an upload',
      { method: 'sendPhoto', params: { photo: 'attach://p' } },
      /params: an upload \("attach:\/\/…"\) cannot/,
    ],
  ])('%s is a contract violation naming the field', (_label, extra, error) => {
    const d = decodeTelegramOutbound(enc({ msg_id: 'bad', chat_id: 42, ...extra }));
    expect(d).toMatchObject({ ok: false, reason: 'invalid', msgId: 'bad', error: expect.stringMatching(error) });
  });

  it('invalid JSON and invalid UTF-8 are invalid_json; a non-object body is invalid', () => {
    expect(decodeTelegramOutbound(enc('{"msg_id":'))).toMatchObject({ ok: false, reason: 'invalid_json' });
    expect(decodeTelegramOutbound(new Uint8Array([0x7b, 0xff, 0x7d]))).toMatchObject({
      ok: false,
      reason: 'invalid_json',
    });
    expect(decodeTelegramOutbound(enc('"text"'))).toMatchObject({ ok: false, reason: 'invalid' });
    expect(decodeTelegramOutbound(enc('null'))).toMatchObject({ ok: false, reason: 'invalid' });
  });

  it('never throws on arbitrary bytes or JSON values', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.jsonValue().map(enc)), (bytes) => {
        const d = decodeTelegramOutbound(bytes);
        expect(typeof d.ok).toBe('boolean');
      }),
      { numRuns: 300 },
    );
  });

  it('a valid message keeps its text verbatim and its publisher kind', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ minLength: 1, maxLength: 200 }).filter((t) => /\S/.test(t)),
        fc.option(fc.string({ minLength: 1, maxLength: 64 }), { nil: undefined }),
        (msgId, text, kind) => {
          const d = decodeTelegramOutbound(enc({ msg_id: msgId, chat_id: 77, text, kind }));
          expect(d).toMatchObject({ ok: true, publisherKind: kind ?? null, message: { msgId, text, chatId: '77' } });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('what reaches a text column is storable', () => {
  /** Strings as a hostile publisher can write them in JSON: any UTF-16 unit (NUL and lone surrogates included). */
  const anyUnits = (max: number) => fc.string({ unit: 'binary', maxLength: max });
  const hostile = (max: number) =>
    fc.oneof(
      anyUnits(max),
      fc
        .tuple(anyUnits(max), fc.constantFrom('\0', '\ud83d', '\ude00', '\u{1F600}'), anyUnits(max))
        .map((p) => p.join('')),
    );

  it('msg_id and kind with NUL or a lone surrogate are refused with the field named; whatever is returned can be stored', () => {
    fc.assert(
      fc.property(hostile(300), fc.option(hostile(70), { nil: undefined }), (msgId, kind) => {
        const d = decodeTelegramOutbound(enc({ msg_id: msgId, chat_id: 77, text: 'fine', kind }));
        if (d.ok) {
          expect(isUnstorable(d.message.msgId)).toBe(false);
          expect(d.publisherKind !== null && isUnstorable(d.publisherKind)).toBe(false);
          expect(d.message.msgId).toBe(msgId);
          return;
        }
        expect(d.msgId === null || isUnstorable(d.msgId)).toBe(false);
        expect(isUnstorable(d.error)).toBe(false);
        // never quotes what it refused
        if (msgId.length > 8) expect(d.error).not.toContain(msgId);
        if (isUnstorable(msgId)) expect(d.error).toMatch(/msg_id: /);
        if (kind !== undefined && kind.length <= 64 && kind !== '' && isUnstorable(kind))
          expect(d.error).toMatch(/kind: /);
      }),
      { numRuns: 500 },
    );
  });

  it('the msg_id of a refused message is cut at 256 UTF-16 units, never inside an emoji', () => {
    const d = decodeTelegramOutbound(enc({ msg_id: `${'m'.repeat(255)}\u{1F600}x`, chat_id: 1, text: 't' }));
    expect(d).toMatchObject({ ok: false, msgId: 'm'.repeat(255) });
    const e = decodeTelegramOutbound(enc({ msg_id: 'a\u0000b', chat_id: 1, text: 't' }));
    expect(e).toMatchObject({ ok: false, msgId: 'a\uFFFDb', error: expect.stringMatching(/^msg_id: contains a NUL/) });
  });

  it("the database refusing a message (TR422, SQLSTATE class 22) is the message's fault; other errors are the database's", () => {
    expect(messageFault({ code: '22P05', message: 'unsupported Unicode escape sequence' })).toBe(
      'the database refused it: SQLSTATE 22P05 (a character PostgreSQL text cannot hold (NUL or an unpaired surrogate))',
    );
    // a class-22 text may quote the value: only the code is kept
    expect(messageFault({ code: '22P02', message: 'invalid input syntax for type bigint: "secret"' })).not.toMatch(
      /secret/,
    );
    expect(messageFault({ code: '22999' })).toMatch(/SQLSTATE 22999 \(a data exception\)/);
    expect(messageFault({ code: 'TR422', message: 'RELAY_OUTBOUND_INVALID: no default chat' })).toBe('no default chat');
    for (const code of ['57P01', '40001', '08006', '23505', undefined]) expect(messageFault({ code })).toBeUndefined();
    expect(messageFault(new Error('connection terminated'))).toBeUndefined();
  });
});

describe('bridge settings', () => {
  it('nak backoff doubles per redelivery up to 5 minutes', () => {
    expect([1, 2, 3, 4].map((n) => nakDelayMs(1000, n))).toEqual([1000, 2000, 4000, 8000]);
    expect(nakDelayMs(1000, 50)).toBe(NAK_BACKOFF_MAX_MS);
  });

  it('creates a stream with the seed settings: the subject, 1 day max age, 5 minute duplicate window', () => {
    expect(seedStreamConfig('TELEGRAM_OUTBOUND', 'telegram.outbound')).toMatchObject({
      name: 'TELEGRAM_OUTBOUND',
      subjects: ['telegram.outbound'],
      max_age: 86_400 * 1e9,
      duplicate_window: 300 * 1e9,
    });
  });

  it('configuration: seed defaults, and bad values name the variable', () => {
    const c = loadConfig({ NATS_URL: 'nats://127.0.0.1:4222' });
    expect(c).toMatchObject({
      NATS_STREAM: 'TELEGRAM_OUTBOUND',
      NATS_SUBJECT: 'telegram.outbound',
      NATS_ALERT_SUBJECT: 'telegram.alerts',
      NATS_CONSUMER: 'tg-relay',
      META_ALERT_ON_DROP: true,
      OUTBOUND_MAX_RETRY_AFTER: 60_000,
      OUTBOUND_MAX_429: 0,
    });
    expect(() => loadConfig({ NATS_URL: 'http://x y' })).toThrow(/NATS_URL/);
    expect(() => loadConfig({ NATS_SUBJECT: 'telegram..outbound' })).toThrow(/NATS_SUBJECT/);
    expect(() => loadConfig({ NATS_NKEY_SEED: 'not-a-seed' })).toThrow(/NATS_NKEY_SEED/);
    expect(() => loadConfig({ META_ALERT_ON_DROP: 'yes' })).toThrow(/META_ALERT_ON_DROP/);
    expect(() => loadConfig({ OUTBOUND_MAX_429: '-1' })).toThrow(/OUTBOUND_MAX_429: expected .* from 0 to 1000000/);
  });

  it('never prints the nkey seed or a password in NATS_URL', () => {
    const seed = `SU${'A'.repeat(56)}`;
    const lines = describeConfig(
      loadConfig({ NATS_URL: 'nats://relay:hunter2pw@127.0.0.1:4222', NATS_NKEY_SEED: seed }),
    ).join('\n');
    expect(lines).toContain('NATS_URL=nats://relay:****@127.0.0.1:4222');
    expect(lines).not.toContain('hunter2pw');
    expect(lines).not.toContain(seed);
  });
});
