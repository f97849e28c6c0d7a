import fc from 'fast-check';
import { errorCode, errorMessage, fieldOf, hasCode } from '../../libs/errors';

describe('errorCode / hasCode / errorMessage / fieldOf', () => {
  it('reads the string code of errors and plain objects, and only a string', () => {
    expect(errorCode(Object.assign(new Error('x'), { code: '40001' }))).toBe('40001');
    expect(errorCode({ code: 503 })).toBeUndefined();
    expect(hasCode({ code: 'ECONNRESET' }, 'EPIPE', 'ECONNRESET')).toBe(true);
    expect(hasCode({ code: 'ECONNRESET' }, 'EPIPE')).toBe(false);
  });

  it('never throws on anything thrown, and finds no code where there is none', () => {
    fc.assert(
      fc.property(fc.anything(), (thrown) => {
        const code = errorCode(thrown);
        const message = errorMessage(thrown);
        expect(message === undefined || typeof message === 'string').toBe(true);
        if (typeof thrown !== 'object' || thrown === null) expect(fieldOf(thrown, 'cause')).toBeUndefined();
        expect(code === undefined || typeof code === 'string').toBe(true);
        if (typeof thrown !== 'object' || thrown === null) expect(code).toBeUndefined();
      }),
    );
    expect(errorCode({ code: { nested: 1 } })).toBeUndefined();
    expect(errorMessage(new Error('boom'))).toBe('boom');
    expect(errorMessage({ message: 42 })).toBeUndefined();
    expect(errorCode(fieldOf(new Error('fetch failed', { cause: { code: 'ECONNREFUSED' } }), 'cause'))).toBe(
      'ECONNREFUSED',
    );
    expect(fieldOf('a string', 'length')).toBeUndefined();
    expect(hasCode(null, 'x')).toBe(false);
  });
});
