import crypto from 'node:crypto';
import fc from 'fast-check';
import { backoffDelay } from '../../../libs/ingress/backoff';
import { sleep } from '../../../libs/lifecycle/timers';
import { buildCapture, captureKey, legacyCaptureKey } from '../../../libs/captures/build';
import { makeMessageUpdate } from '../../support/ingress-fixtures';

describe('backoffDelay', () => {
  const policy = { baseMs: 100, capMs: 1000 };
  it('grows exponentially with jitter between half and all of the step, and is capped', () => {
    expect(backoffDelay(0, policy, () => 0)).toBe(50);
    expect(backoffDelay(0, policy, () => 1)).toBe(100);
    expect(backoffDelay(3, policy, () => 0)).toBe(400);
    expect(backoffDelay(3, policy, () => 0.999)).toBeLessThanOrEqual(800);
    expect(backoffDelay(50, policy, () => 1)).toBe(1000);
    expect(backoffDelay(50, policy, () => 0)).toBe(500);
  });
  it('sleep ends early when aborted', async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const p = sleep(10_000, ac.signal);
    ac.abort();
    await p;
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

describe('buildCapture', () => {
  it('keys the capture telegram:{bot_id}:{update_id}:{chat_id}:{message_id} and keeps the original text and message', () => {
    const upd = makeMessageUpdate({ updateId: 77, chatId: -100, messageId: 5, fromId: 3, text: '  Original *text*  ' });
    const c = buildCapture({ botId: '9', updateId: 77, type: 'message', message: upd.message });
    expect(c.key).toBe('telegram:9:77:-100:5');
    expect(captureKey('9', 77, -100, 5)).toBe(c.key);
    expect(c.legacyKey).toBe('telegram:77:-100:5');
    expect(legacyCaptureKey(77, -100, 5)).toBe(c.legacyKey);
    expect(c.payload).toMatchObject({
      key: c.key,
      update_id: 77,
      update_type: 'message',
      text: '  Original *text*  ',
      chat: upd.message.chat,
      from: upd.message.from,
      date: upd.message.date,
      message: upd.message,
    });
    expect(c.fromId).toBe(3);
  });
  it('hashes the payload deterministically and differently for different data', () => {
    const a = buildCapture({
      botId: '9',
      updateId: 1,
      type: 'message',
      message: makeMessageUpdate({ updateId: 1, text: 'x' }).message,
    });
    const b = buildCapture({
      botId: '9',
      updateId: 1,
      type: 'message',
      message: makeMessageUpdate({ updateId: 1, text: 'x' }).message,
    });
    const c = buildCapture({
      botId: '9',
      updateId: 1,
      type: 'message',
      message: makeMessageUpdate({ updateId: 1, text: 'y' }).message,
    });
    expect(a.sha256).toBe(b.sha256);
    expect(a.key).toBe(c.key);
    expect(a.sha256).not.toBe(c.sha256);
  });
  it('uses the caption of a media message as text, and null without either', () => {
    const m = { message_id: 1, date: 1, chat: { id: 1, type: 'private' }, caption: 'photo caption' };
    expect(buildCapture({ botId: '9', updateId: 1, type: 'message', message: m }).text).toBe('photo caption');
    expect(
      buildCapture({
        botId: '9',
        updateId: 1,
        type: 'channel_post',
        message: { message_id: 1, date: 1, chat: { id: -1, type: 'channel' } },
      }),
    ).toMatchObject({
      text: null,
      fromId: null,
    });
  });
  it('the legacy sha256 is that of the same document under the legacy key, for any text', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 2 ** 31 }), fc.integer(), (text, updateId, chatId) => {
        const m = { message_id: 3, date: 1, chat: { id: chatId, type: 'group' }, text };
        const c = buildCapture({ botId: '9', updateId, type: 'message', message: m });
        const legacyDoc = JSON.stringify({ ...c.payload, key: c.legacyKey });
        expect(c.legacySha256).toBe(crypto.createHash('sha256').update(legacyDoc).digest('hex'));
        expect(c.legacySha256).not.toBe(c.sha256);
      }),
    );
  });
});
