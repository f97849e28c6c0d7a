import fc from 'fast-check';
import { parseTokenKey } from '../../../libs/bots';
import { fleetWebhookKeys } from '../../../libs/ingress/webhook-keys';

const keyOf = (bytes: Uint8Array) => parseTokenKey(Buffer.from(bytes).toString('hex'));
const key32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
// real bot ids have 9 or 10 digits (a shorter one could show up in 43 random characters by chance)
const botId = fc.bigInt({ min: 100_000_000n, max: 2n ** 52n }).map(String);
// Telegram's secret_token alphabet and length; also nothing a URL path segment would need to escape
const TELEGRAM_SECRET = /^[A-Za-z0-9_-]{1,256}$/;

describe('fleet webhook path and secret', () => {
  it('are the same for a bot whenever they are derived from the same key (restarts, other pollers)', () => {
    fc.assert(
      fc.property(key32, botId, (k, id) => {
        const a = fleetWebhookKeys(keyOf(k));
        const b = fleetWebhookKeys(keyOf(Uint8Array.from(k)));
        expect(b.pathKey(id)).toBe(a.pathKey(id));
        expect(b.secret(id)).toBe(a.secret(id));
      }),
    );
  });

  it('differ between bots, between path and secret, and between keys', () => {
    fc.assert(
      fc.property(key32, key32, botId, botId, (k1, k2, id1, id2) => {
        fc.pre(id1 !== id2 && Buffer.compare(Buffer.from(k1), Buffer.from(k2)) !== 0);
        const a = fleetWebhookKeys(keyOf(k1));
        const b = fleetWebhookKeys(keyOf(k2));
        expect(a.pathKey(id1)).not.toBe(a.pathKey(id2));
        expect(a.secret(id1)).not.toBe(a.secret(id2));
        expect(a.pathKey(id1)).not.toBe(a.secret(id1));
        expect(b.pathKey(id1)).not.toBe(a.pathKey(id1));
        expect(b.secret(id1)).not.toBe(a.secret(id1));
      }),
    );
  });

  it('are 43 characters Telegram and a URL path accept, containing neither the bot id nor the key', () => {
    fc.assert(
      fc.property(key32, botId, (k, id) => {
        const tokenKey = keyOf(k);
        const keys = fleetWebhookKeys(tokenKey);
        for (const v of [keys.pathKey(id), keys.secret(id)]) {
          expect(v).toMatch(TELEGRAM_SECRET);
          expect(v).toHaveLength(43);
          expect(encodeURIComponent(v)).toBe(v);
          expect(v).not.toContain(id);
          expect(v).not.toContain(tokenKey.key.toString('base64url').slice(0, 8));
        }
      }),
    );
  });

  it('are pinned: another derivation would move every registered webhook and change its secret', () => {
    const keys = fleetWebhookKeys(parseTokenKey('00'.repeat(32)));
    expect(keys.pathKey('123456')).toBe('A9-47xVzXUdC10bcceSaU_I7PEhu0PMCLeb7QLJsFdM');
    expect(keys.secret('123456')).toBe('PboBaRrOO_eLokiGPvLGl7q9z1f2K-4Tm068PELkkAo');
  });
});
