/** safeText/safeJson: every stored error string can be written to PostgreSQL text and jsonb. */
import fc from 'fast-check';
import { safeJson, safeText } from '../../../libs/queue/errors';

const EMOJI = '\u{1F600}';
const codePoints = (s: string) => [...s].length;
/** No lone surrogate (a paired one is one code point under the u flag). */
const wellFormed = (s: string) => !/\p{Cs}/u.test(s);

describe('safeText', () => {
  it('keeps clean text as is, cuts on code points, replaces NUL and lone surrogates', () => {
    expect(safeText('plain', 10)).toBe('plain');
    expect(safeText(EMOJI.repeat(5), 3)).toBe(`${EMOJI.repeat(2)}…`);
    expect(safeText(`a\u0000b${EMOJI.slice(0, 1)}c${EMOJI.slice(1)}`, 50)).toBe('a\uFFFDb\uFFFDc\uFFFD');
    expect(safeText('x'.repeat(10), 10)).toBe('x'.repeat(10));
    expect(safeText('x'.repeat(11), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('property: the result is well-formed, NUL-free, at most max code points, and a prefix of the input when the input was clean', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.array(fc.constantFrom('\u0000', EMOJI.slice(0, 1), EMOJI.slice(1), EMOJI), { maxLength: 5 }),
        fc.integer({ min: 1, max: 200 }),
        (s, junk, max) => {
          const input = s + junk.join('');
          const out = safeText(input, max);
          expect(wellFormed(out)).toBe(true);
          expect(out.includes('\u0000')).toBe(false);
          expect(codePoints(out)).toBeLessThanOrEqual(max);
          if (wellFormed(input) && !input.includes('\u0000')) {
            if (codePoints(input) <= max) expect(out).toBe(input);
            else expect(input.startsWith(out.slice(0, -1))).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('safeJson sanitizes every string and key of a nested value', () => {
    const out = safeJson({ [`k\u0000`]: [`v${EMOJI.slice(0, 1)}`, 1, null, { deep: '\u0000' }] });
    expect(JSON.stringify(out)).toBe(JSON.stringify({ 'k\uFFFD': ['v\uFFFD', 1, null, { deep: '\uFFFD' }] }));
  });
});
