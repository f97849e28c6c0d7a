/**
 * Telegram's limits that the relay checks before a request leaves (so a message Telegram would
 * refuse fails on its own row with a clear reason), defined once. SQL functions that check the
 * same limits (the outbound table, relay.outbound_upsert) are compared with these by
 * test/integration/db/limits.test.ts.
 */

/** A message text: at most 4096 UTF-16 units after entity parsing (Bot API, sendMessage). */
export const TELEGRAM_TEXT_MAX = 4096;

/** A media caption: at most 1024 characters after entity parsing (Bot API, sendPhoto and the others). */
export const TELEGRAM_CAPTION_MAX = 1024;

/** One file a bot uploads: 50 MB (Bot API; photos 10 MB, left to Telegram to refuse). */
export const TELEGRAM_UPLOAD_MAX = 50 * 1024 * 1024;

/** A webhook's secret_token: 1-256 characters of A-Z, a-z, 0-9, _ and - (Bot API, setWebhook). */
export const TELEGRAM_SECRET_TOKEN_MAX = 256;
