/**
 * Telegram's limits that the relay checks before a request leaves (so a message Telegram would
 * refuse fails on its own row with a clear reason), defined once. SQL functions that check the
 * same limits (the outbound table, relay.outbound_upsert) are compared with these by
 * test/integration/db/limits.test.ts.
 */

/** A message text: at most 4096 UTF-16 units after entity parsing (Bot API, sendMessage). */
export const TELEGRAM_TEXT_MAX = 4096;

/** A webhook's secret_token: 1-256 characters of A-Z, a-z, 0-9, _ and - (Bot API, setWebhook). */
export const TELEGRAM_SECRET_TOKEN_MAX = 256;
