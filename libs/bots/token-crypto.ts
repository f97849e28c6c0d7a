/**
 * Bot tokens at rest: AES-256-GCM (node:crypto) under TOKEN_ENCRYPTION_KEY. A token is stored as
 * iv (12 random bytes) || auth tag (16) || ciphertext, with the bot id as additional authenticated
 * data, so a ciphertext moved to another bot's row, a flipped bit or a different key fails to
 * decrypt instead of yielding a wrong token. The key id (a hash prefix of the key, never the key)
 * is stored next to it so a process can say "encrypted with another key" rather than "corrupt".
 */
import crypto from 'node:crypto';
import { RelayError } from '../errors';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class TokenKeyError extends RelayError {
  readonly code = 'RELAY_TOKEN_KEY';
}

export interface TokenKey {
  readonly key: Buffer;
  /** The first 16 hex digits of sha256(key): safe to store and to print. */
  readonly id: string;
}

/**
 * TOKEN_ENCRYPTION_KEY: 32 bytes as 64 hex digits or base64 (44 characters). Anything else is a
 * TokenKeyError naming the variable and the form, never echoing the value.
 */
export function parseTokenKey(raw: string): TokenKey {
  const v = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(v)) key = Buffer.from(v, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=$/.test(v)) key = Buffer.from(v, 'base64');
  if (!key || key.length !== 32)
    throw new TokenKeyError(
      'TOKEN_ENCRYPTION_KEY: expected 32 bytes as 64 hex digits or 44 base64 characters (e.g. `openssl rand -hex 32`)',
    );
  return { key, id: crypto.createHash('sha256').update(key).digest('hex').slice(0, 16) };
}

export function encryptToken(k: TokenKey, botId: string, token: string): Buffer {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', k.key, iv);
  cipher.setAAD(Buffer.from(botId, 'utf8'));
  const body = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The token, or a TokenKeyError that names the bot and why (never any part of the token). */
export function decryptToken(k: TokenKey, botId: string, sealed: Buffer, keyId?: string): string {
  if (keyId !== undefined && keyId !== k.id)
    throw new TokenKeyError(
      `the token of bot ${botId} was encrypted with another TOKEN_ENCRYPTION_KEY (key id ${keyId}, this process has ${k.id})`,
    );
  if (sealed.length <= IV_BYTES + TAG_BYTES) throw new TokenKeyError(`the stored token of bot ${botId} is truncated`);
  try {
    const decipher = crypto.createDecipheriv('aes-256-gcm', k.key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(botId, 'utf8'));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new TokenKeyError(`the stored token of bot ${botId} does not decrypt with this TOKEN_ENCRYPTION_KEY`);
  }
}
