import { AdminError, ADMIN_ERRORS, fieldOf } from '../../../libs/admin/errors';
import { decodeCursor, encodeCursor } from '../../../libs/admin/pagination';
import { likePattern } from '../../../libs/admin/queries';
import { pendingUpdatesCache } from '../../../libs/admin/webhook-info';

describe('validation errors name the field at fault', () => {
  test.each([
    ['querystring', { instancePath: '/limit', keyword: 'maximum' }, 'querystring.limit'],
    ['body', { instancePath: '', keyword: 'required', params: { missingProperty: 'chat_id' } }, 'body.chat_id'],
    [
      'body',
      { instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'stat' } },
      'body.stat',
    ],
    [
      'body',
      { instancePath: '/reply_markup/inline_keyboard/0', keyword: 'type' },
      'body.reply_markup.inline_keyboard.0',
    ],
    ['params', { instancePath: '/id', keyword: 'type' }, 'params.id'],
  ])('%s %j → %s', (ctx, issue, field) => expect(fieldOf(ctx, issue)).toBe(field));
});

test('every error code maps to one HTTP status, 4xx/5xx', () => {
  for (const [code, status] of Object.entries(ADMIN_ERRORS)) {
    expect(code).toMatch(/^RELAY_[A-Z_]+$/);
    expect(status).toBeGreaterThanOrEqual(400);
    expect(new AdminError(code as keyof typeof ADMIN_ERRORS, 'x').statusCode).toBe(status);
  }
});

test('cursors round-trip and reject anything else with RELAY_ADMIN_BAD_CURSOR', () => {
  const k = { us: 1_900_000_000_123_456, id: 987654321 };
  expect(decodeCursor(encodeCursor(k))).toEqual(k);
  for (const bad of [
    '',
    'xyz',
    Buffer.from('1.2.3').toString('base64url'),
    Buffer.from('-1.2').toString('base64url'),
  ]) {
    expect(() => decodeCursor(bad)).toThrow(expect.objectContaining({ code: 'RELAY_ADMIN_BAD_CURSOR' }));
  }
});

test('error-text filters match %, _ and \\ literally', () => {
  expect(likePattern('50% off_now\\')).toBe('%50\\% off\\_now\\\\%');
});

test('pending_update_count is served from cache and refreshed in the background once stale', async () => {
  let t = 0;
  let calls = 0;
  const cache = pendingUpdatesCache(() => Promise.resolve(++calls * 10), { ttlMs: 1000, clock: () => new Date(t) });
  expect(cache.peek('1')).toBeUndefined(); // first peek starts a fetch, never waits
  await cache.refresh('1');
  expect(cache.peek('1')?.count).toBe(10);
  t = 500;
  expect(cache.peek('1')?.count).toBe(10);
  t = 2000;
  expect(cache.peek('1')?.count).toBe(10); // stale: answers the old value, refreshes behind
  await cache.refresh('1');
  expect(cache.peek('1')?.count).toBeGreaterThanOrEqual(20);
});
