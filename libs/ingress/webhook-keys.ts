/**
 * Each registered bot's webhook path and secret token in a fleet (INGRESS=webhook without
 * TELEGRAM_BOT_TOKEN), derived from TOKEN_ENCRYPTION_KEY so that every fleet poller, today or after
 * a restart, computes the same two values for a bot without storing them, and nobody without the
 * key can compute either:
 *
 *   path key = base64url(HMAC-SHA256(HKDF(key, "tg-relay fleet webhook path"),   bot id))
 *   secret   = base64url(HMAC-SHA256(HKDF(key, "tg-relay fleet webhook secret"), bot id))
 *
 * Two subkeys, so the path, which shows in access logs and proxies, says nothing about the secret
 * that authenticates a delivery. Neither contains the token or any part of it. Both are 43
 * characters of A-Z a-z 0-9 _ - (Telegram's secret_token alphabet, and safe in a URL path).
 * A new TOKEN_ENCRYPTION_KEY gives every bot a new path and secret; the lease owner notices that
 * the registered URL is no longer its own at its next check and registers the new one.
 */
import crypto from 'node:crypto';
import type { TokenKey } from '../bots';

export interface FleetWebhookKeys {
  /** The last segment of the bot's webhook path (`/telegram/webhook/<path key>`). */
  pathKey(botId: string): string;
  /** The bot's `secret_token`, checked against `X-Telegram-Bot-Api-Secret-Token`. */
  secret(botId: string): string;
}

const subkey = (key: Buffer, purpose: string): Buffer =>
  Buffer.from(crypto.hkdfSync('sha256', key, Buffer.alloc(0), `tg-relay fleet webhook ${purpose}`, 32));

export function fleetWebhookKeys(key: TokenKey): FleetWebhookKeys {
  const pathKey = subkey(key.key, 'path');
  const secretKey = subkey(key.key, 'secret');
  const mac = (k: Buffer, botId: string) => crypto.createHmac('sha256', k).update(botId, 'utf8').digest('base64url');
  return {
    pathKey: (botId) => mac(pathKey, botId),
    secret: (botId) => mac(secretKey, botId),
  };
}
