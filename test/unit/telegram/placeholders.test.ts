import fc from 'fast-check';
import {
  isPlaceholder,
  newPlaceholder,
  placeholdersIn,
  resolvePlaceholders,
} from '../../../libs/telegram/placeholders';

describe('placeholder message ids', () => {
  it('are negative safe integers, never 0, and do not repeat in 10,000 draws', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 10_000; i++) {
      const p = newPlaceholder();
      expect(Number.isSafeInteger(p)).toBe(true);
      expect(p).toBeLessThan(-(2 ** 40));
      expect(isPlaceholder(p)).toBe(true);
      seen.add(p);
    }
    expect(seen.size).toBe(10_000);
  });

  it('never take a real message id, a supergroup chat id or a non-integer for one', () => {
    for (const v of [0, 1, 2 ** 31, -1, -1001234567890, -(2 ** 40), 1.5, NaN, '-3000000000000', null, undefined])
      expect(isPlaceholder(v)).toBe(false);
  });

  it('resolve in every message-id place and nowhere else', () => {
    const a = newPlaceholder();
    const b = newPlaceholder();
    const params = {
      chat_id: a, // a chat id is never resolved
      message_id: a,
      reply_parameters: { message_id: b, chat_id: 5 },
      message_ids: [a, 7, b],
      caption: String(a),
    };
    expect(placeholdersIn(params).sort()).toEqual([a, b].sort());
    const { params: out, missing } = resolvePlaceholders(
      params,
      new Map([
        [a, 11],
        [b, 12],
      ]),
    );
    expect(missing).toEqual([]);
    expect(out).toEqual({
      chat_id: a,
      message_id: 11,
      reply_parameters: { message_id: 12, chat_id: 5 },
      message_ids: [11, 7, 12],
      caption: String(a),
    });
    expect(params.message_id).toBe(a); // the input is left as it was
  });

  it('report what they cannot resolve (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (known) => {
        const ps = known.map(() => newPlaceholder());
        const real = new Map(ps.flatMap((p, i) => (known[i] ? [[p, i + 1] as [number, number]] : [])));
        const { params, missing } = resolvePlaceholders({ message_ids: ps }, real);
        expect(missing.sort()).toEqual(ps.filter((_, i) => !known[i]).sort());
        expect((params.message_ids as number[]).filter((v) => v > 0)).toEqual(
          ps.flatMap((_, i) => (known[i] ? [i + 1] : [])),
        );
      }),
    );
  });
});
