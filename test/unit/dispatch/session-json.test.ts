/** What a session value may be: JSON that PostgreSQL's jsonb holds as given; anything else is refused naming the key, never the value. */
import fc from 'fast-check';
import type { Pool } from 'pg';
import { AttemptSessions, sessionJson } from '../../../libs/dispatch/attempt-sessions';

describe('sessionJson', () => {
  test('any JSON value without NUL or lone surrogates is stored as JSON.stringify writes it', () => {
    fc.assert(
      fc.property(fc.jsonValue({ noUnicodeString: false }), (v) => {
        const text = JSON.stringify(v);
        fc.pre(!/\\u0000|\\ud[89a-f]/i.test(text));
        expect(sessionJson('k', v)).toBe(text);
      }),
    );
  });

  test.each([
    ['a function', { f: () => 1 }, /its field "f" is a function/],
    ['a symbol', { s: Symbol('x') }, /its field "s" is a symbol/],
    ['a BigInt', { n: 1n }, /its field "n" is a BigInt/],
    ['NaN', { x: NaN }, /its field "x" is NaN/],
    ['Infinity', [Infinity], /is Infinity/],
    ['a NUL in a string', { t: 'a\u0000b' }, /NUL/],
    ['a lone surrogate', { t: 'x\ud83d' }, /lone surrogate/],
    ['a NUL in a field name', { ['a\u0000']: 1 }, /a field name contains a NUL/],
    ['undefined', undefined, /its value is not JSON/],
  ])('%s is refused with the key named', (_what, value, problem) => {
    let err: unknown;
    try {
      sessionJson('user:42', value);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'RELAY_SESSION_VALUE_INVALID', key: 'user:42' });
    expect((err as Error).message).toMatch(/^session "user:42" cannot be stored: /);
    expect((err as Error).message).toMatch(problem);
  });

  test('a cycle is refused, and the message never quotes the value', () => {
    const v: Record<string, unknown> = { secret: 'private-text' };
    v.self = v;
    expect(() => sessionJson('k', v)).toThrow(/session "k" cannot be stored: its value has a cycle/);
    try {
      sessionJson('k', { secret: 'private-text', f: () => 1 });
    } catch (e) {
      expect((e as Error).message).not.toContain('private-text');
    }
  });
});

describe('AttemptSessions', () => {
  const noPool = {} as Pool; // never reached: these calls are refused before any query

  test('once the attempt is over, reads and writes are refused with RELAY_DISPATCH_CLOSED', async () => {
    const s = new AttemptSessions({ pool: noPool, botId: '1', ttlMs: 60_000 });
    s.close();
    await expect(s.get('k')).rejects.toMatchObject({ code: 'RELAY_DISPATCH_CLOSED' });
    await expect(s.set('k', {})).rejects.toMatchObject({ code: 'RELAY_DISPATCH_CLOSED' });
    await expect(s.delete('k')).rejects.toMatchObject({ code: 'RELAY_DISPATCH_CLOSED' });
  });

  test.each([[''], ['x'.repeat(513)], ['a\ud800']])('key %j is refused', async (key) => {
    const s = new AttemptSessions({ pool: noPool, botId: '1', ttlMs: 60_000 });
    await expect(s.get(key)).rejects.toMatchObject({ code: 'RELAY_SESSION_VALUE_INVALID' });
  });
});
