import { isPgInputError } from '../../../libs/admin/errors';
import { checkValue, MAX_BODY_DEPTH, stringProblem } from '../../../libs/admin/input';

describe('admin input guard', () => {
  test.each([
    ['plain', undefined],
    ['😀 emoji, RTL \u200f, text that only looks like \\u0000', undefined],
    ['', undefined],
    ['a\u0000b', /NUL/],
    ['cut \ud83d', /lone surrogate/],
    ['\ude00 trailing half first', /lone surrogate/],
  ])('%j → %p', (s, problem) => {
    const p = stringProblem(s);
    if (problem) expect(p).toMatch(problem);
    else expect(p).toBeUndefined();
  });

  test('names the field, keys included', () => {
    expect(() => checkValue({ a: [{ b: 'x\u0000' }] }, 'body')).toThrow(
      expect.objectContaining({
        code: 'RELAY_ADMIN_VALIDATION',
        details: expect.objectContaining({ field: 'body.a.0.b' }),
      }),
    );
    expect(() => checkValue({ ['k\ud800']: 1 }, 'body')).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ field: 'body key' }) }),
    );
  });

  test('a deeply nested value is refused without recursion (no stack overflow)', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(() => checkValue(deep, 'body')).toThrow(new RegExp(`nests deeper than ${MAX_BODY_DEPTH}`));
    let ok: unknown = 'x';
    for (let i = 0; i < MAX_BODY_DEPTH; i++) ok = { a: ok };
    expect(() => checkValue(ok, 'body')).not.toThrow();
  });

  test('only PostgreSQL data exceptions count as input errors', () => {
    expect(isPgInputError({ code: '22003', severity: 'ERROR' })).toBe(true);
    expect(isPgInputError({ code: '22P02', severity: 'ERROR' })).toBe(true);
    expect(isPgInputError({ code: '54001', severity: 'ERROR' })).toBe(true);
    expect(isPgInputError({ code: '23505', severity: 'ERROR' })).toBe(false); // unique violation: not input
    expect(isPgInputError({ code: '22003' })).toBe(false); // not from PostgreSQL
    expect(isPgInputError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isPgInputError(undefined)).toBe(false);
  });
});
