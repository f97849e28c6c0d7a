/** The seed's TelegramOutbound contract as the bridge reads it (no NATS, no database). */
import fc from 'fast-check';
import { decodeTelegramOutbound } from '../../../libs/jetstream/contract';
import { nakDelayMs, NAK_BACKOFF_MAX_MS } from '../../../libs/jetstream/ingest';
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
