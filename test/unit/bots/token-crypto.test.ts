/** Tokens at rest: AES-256-GCM with the bot id bound in, and a key that is checked before use. */
import crypto from 'node:crypto';
import fc from 'fast-check';
import { decryptToken, encryptToken, parseTokenKey, TokenKeyError } from '../../../libs/bots/token-crypto';

const hexKey = () => crypto.randomBytes(32).toString('hex');

it('round-trips any token for any bot, and the ciphertext never contains the token', () => {
  const key = parseTokenKey(hexKey());
  fc.assert(
    fc.property(fc.stringMatching(/^[0-9]{1,20}$/), fc.string({ minLength: 1, maxLength: 200 }), (botId, token) => {
      const sealed = encryptToken(key, botId, token);
      expect(decryptToken(key, botId, sealed, key.id)).toBe(token);
      if (token.length >= 4) expect(sealed.includes(Buffer.from(token, 'utf8'))).toBe(false);
    }),
  );
});

it('two encryptions of one token differ (a random iv each)', () => {
  const key = parseTokenKey(hexKey());
  expect(encryptToken(key, '1', '1:abc').equals(encryptToken(key, '1', '1:abc'))).toBe(false);
});

it('refuses another bot id, a flipped bit, a truncated value and another key, naming the bot only', () => {
  const key = parseTokenKey(hexKey());
  const token = '4242:secret-secret-secret';
  const sealed = encryptToken(key, '4242', token);
  const refusals = [
    () => decryptToken(key, '4243', sealed),
    () => {
      const bad = Buffer.from(sealed);
      bad[bad.length - 1] ^= 1;
      return decryptToken(key, '4242', bad);
    },
    () => decryptToken(key, '4242', sealed.subarray(0, 20)),
    () => decryptToken(parseTokenKey(hexKey()), '4242', sealed),
  ];
  for (const f of refusals) {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TokenKeyError);
    expect((err as TokenKeyError).code).toBe('RELAY_TOKEN_KEY');
    expect((err as Error).message).not.toContain('secret');
  }
  // a stored key id that is not this key's: said as such, before trying
  expect(() => decryptToken(parseTokenKey(hexKey()), '4242', sealed, key.id)).toThrow(/another TOKEN_ENCRYPTION_KEY/);
});

it('reads the key as 64 hex digits or 44 base64 characters, the same bytes either way; anything else names the variable', () => {
  const bytes = crypto.randomBytes(32);
  const a = parseTokenKey(bytes.toString('hex'));
  const b = parseTokenKey(` ${bytes.toString('base64')}\n`);
  expect(a.id).toBe(b.id);
  expect(a.id).toMatch(/^[0-9a-f]{16}$/);
  for (const bad of ['', 'short', bytes.toString('hex').slice(2), crypto.randomBytes(16).toString('base64')]) {
    expect(() => parseTokenKey(bad)).toThrow(/^TOKEN_ENCRYPTION_KEY: expected 32 bytes/);
  }
});
