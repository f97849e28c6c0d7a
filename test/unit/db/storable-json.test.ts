import fc from 'fast-check';
import { isUnstorable, jsonbText, storableJsonText, storableText, storableValue } from '../../../libs/db/storable-json';

const anyText = fc.oneof(fc.string16bits({ maxLength: 40 }), fc.fullUnicodeString({ maxLength: 40 }));
// eslint-disable-next-line no-control-regex -- matches NUL on purpose: a stored value must never contain one
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('storable-json: what PostgreSQL text/jsonb can hold', () => {
  it('replaces exactly NUL and unpaired surrogates by U+FFFD, keeps pairs and everything else', () => {
    expect(storableText('a\u0000b')).toBe('a\ufffdb');
    expect(storableText('😀 \ud83d x \ude00')).toBe('😀 \ufffd x \ufffd');
    expect(storableText('C:\\u0000dir \u202e')).toBe('C:\\u0000dir \u202e');
    fc.assert(
      fc.property(anyText, (s) => {
        const t = storableText(s);
        expect(UNSTORABLE.test(t)).toBe(false);
        expect(t.length).toBe(s.length);
        expect(isUnstorable(s)).toBe(UNSTORABLE.test(s));
        if (!UNSTORABLE.test(s)) expect(t).toBe(s);
      }),
      { numRuns: 300 },
    );
  });

  it('copies only what changes, keys included, and keeps "__proto__" a plain key', () => {
    const clean = { a: ['x', { b: 'y' }] };
    expect(storableValue(clean)).toBe(clean);
    const v = JSON.parse('{"__proto__":{"k\\u0000":"\\ud800"},"n":1,"l":[null,true,"\\u0000"]}');
    const c = storableValue(v) as Record<string, unknown>;
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['__proto__', 'n', 'l']);
    expect(JSON.parse(JSON.stringify(c))).toEqual(
      JSON.parse('{"__proto__":{"k\ufffd":"\ufffd"},"n":1,"l":[null,true,"\ufffd"]}'),
    );
    expect(v.l[2]).toBe('\u0000'); // the original is untouched
  });

  it('jsonbText never contains an escape jsonb refuses; storableJsonText keeps the meaning of a literal lone surrogate', () => {
    fc.assert(
      fc.property(fc.dictionary(anyText, anyText, { maxKeys: 4 }), (o) => {
        const raw = JSON.stringify(o);
        expect(UNSTORABLE.test(JSON.stringify(JSON.parse(jsonbText(o, raw))))).toBe(false);
        expect(jsonbText(o, raw)).not.toMatch(/(^|[^\\])(\\\\)*\\u(0000|d[89a-f])/i);
      }),
      { numRuns: 300 },
    );
    const literal = '{"t":"a\ud800b"}'; // a JS string no HTTP body can produce
    expect(storableJsonText(literal)).toBe('{"t":"a\\ud800b"}');
    expect(JSON.parse(storableJsonText(literal))).toEqual(JSON.parse(literal));
  });
});
