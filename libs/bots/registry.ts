/**
 * Registering bots (relay.bots): validation of what an operator gives, the token checked with
 * getMe (which also says the bot's id and username) and stored encrypted. Used by `tg-relay bots`
 * and `/v1/bots`; both answer with BotRow, which never carries the token.
 */
import type { Pool } from '../db/pool';
import { configSchema, type Config } from '../config/schema';
import { RelayError } from '../errors';
import { normalizeChatId } from '../outbound/message';
import { createBotApiClient } from '../telegram';
import { isTelegramApiError } from '../telegram/errors';
import { botUpsert, type BotRow, type BotUpsert } from './queries';
import { encryptToken, type TokenKey } from './token-crypto';

/** The configuration variables a bot may set for itself, validated as the configuration does. */
export const BOT_SETTINGS = [
  'OUTBOUND_RATE_PER_BOT',
  'OUTBOUND_RATE_PER_CHAT',
  'OUTBOUND_RATE_PER_GROUP',
  'PAID_BROADCAST_RATE',
  'HANDLER_TIMEOUT',
] as const;
export type BotSetting = (typeof BOT_SETTINGS)[number];

/**
 * The configuration as one registered bot runs under it: its settings over the configuration's
 * values (a setting that does not parse, which registration refuses, is left out).
 */
export function withBotSettings<C extends Pick<Config, BotSetting>>(config: C, settings: Record<string, string>): C {
  const c = { ...config };
  for (const name of BOT_SETTINGS) {
    const parsed = settings[name] === undefined ? undefined : configSchema.shape[name].safeParse(settings[name]);
    if (parsed?.success) Object.assign(c, { [name]: parsed.data });
  }
  return c;
}

export class BotInvalidError extends RelayError {
  readonly code = 'RELAY_BOT_INVALID';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

export class BotTokenRejectedError extends RelayError {
  readonly code = 'RELAY_BOT_TOKEN_REJECTED';
}

export interface BotRegistration {
  token: string;
  handlers?: string | null;
  captureUrl?: string | null;
  allowedChatIds?: readonly (string | number)[];
  opsChatId?: string | number | null;
  enabled?: boolean;
  settings?: Record<string, string>;
}

const TOKEN = /^([0-9]{1,20}):[A-Za-z0-9_-]{1,200}$/;

export interface ValidRegistration {
  token: string;
  botId: string;
  handlers: string | null;
  captureUrl: string | null;
  allowedChatIds: string[];
  opsChatId: string | null;
  enabled: boolean;
  settings: Record<string, string>;
}

/** The registration's fields, checked and normalised; a BotInvalidError names the first bad one. */
export function validateRegistration(r: BotRegistration): ValidRegistration {
  const m = typeof r.token === 'string' ? TOKEN.exec(r.token.trim()) : null;
  if (!m) throw new BotInvalidError('token: expected a bot token from @BotFather, <digits>:<secret>', 'token');
  const handlers = r.handlers?.trim() || null;
  if (handlers && handlers.length > 1000) throw new BotInvalidError('handlers: at most 1000 characters', 'handlers');
  const captureUrl = r.captureUrl?.trim() || null;
  if (captureUrl) {
    const ok = URL.canParse(captureUrl) && ['http:', 'https:'].includes(new URL(captureUrl).protocol);
    if (!ok || captureUrl.length > 2000)
      throw new BotInvalidError('capture_url: expected an http(s) URL of at most 2000 characters', 'capture_url');
  }
  const allowed = (r.allowedChatIds ?? []).map((c) => {
    const id = normalizeChatId(c);
    if (!id) throw new BotInvalidError('allowed_chat_ids: expected integer chat ids other than 0', 'allowed_chat_ids');
    return id;
  });
  if (allowed.length > 10_000) throw new BotInvalidError('allowed_chat_ids: at most 10,000', 'allowed_chat_ids');
  let opsChatId: string | null = null;
  if (r.opsChatId != null && r.opsChatId !== '') {
    opsChatId = normalizeChatId(r.opsChatId) ?? null;
    if (!opsChatId) throw new BotInvalidError('ops_chat_id: expected a chat id or @channelusername', 'ops_chat_id');
  }
  const settings: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.settings ?? {})) {
    if (!(BOT_SETTINGS as readonly string[]).includes(name))
      throw new BotInvalidError(
        `settings: ${name.slice(0, 64)} is not a bot setting (${BOT_SETTINGS.join(', ')})`,
        'settings',
      );
    const parsed = configSchema.shape[name as BotSetting].safeParse(String(value));
    if (!parsed.success)
      throw new BotInvalidError(`settings: ${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 'settings');
    settings[name] = String(value);
  }
  return {
    token: r.token.trim(),
    botId: m[1],
    handlers,
    captureUrl,
    allowedChatIds: [...new Set(allowed)],
    opsChatId,
    enabled: r.enabled ?? true,
    settings,
  };
}

/**
 * A registration ready to store: validated, the token checked with getMe (a token Telegram refuses is
 * a BotTokenRejectedError; Telegram unreachable is its network error) and encrypted under `key`.
 * Nothing is written, so a caller can store it in a transaction of its own (the admin API's audit).
 */
export async function prepareBot(
  r: BotRegistration,
  opts: { key: TokenKey; apiRoot?: string; timeoutMs?: number },
): Promise<BotUpsert> {
  const v = validateRegistration(r);
  const client = createBotApiClient({ token: v.token, apiRoot: opts.apiRoot, timeoutMs: opts.timeoutMs ?? 10_000 });
  let me: { id: number; username?: string };
  try {
    me = await client.getMe();
  } catch (err) {
    if (isTelegramApiError(err))
      throw new BotTokenRejectedError(`Telegram refused the token (getMe: ${err.errorCode} ${err.description})`);
    throw err;
  } finally {
    client.close();
  }
  if (String(me.id) !== v.botId)
    throw new BotTokenRejectedError(`getMe answered bot ${me.id}, but the token is of bot ${v.botId}`);
  return {
    id: v.botId,
    username: me.username ?? null,
    tokenEncrypted: encryptToken(opts.key, v.botId, v.token),
    tokenKeyId: opts.key.id,
    handlers: v.handlers,
    captureUrl: v.captureUrl,
    allowedChatIds: v.allowedChatIds,
    opsChatId: v.opsChatId,
    enabled: v.enabled,
    settings: v.settings,
  };
}

/** Registers a bot, or updates its registration (prepareBot, then stored). */
export async function addBot(
  pool: Pool,
  r: BotRegistration,
  opts: { key: TokenKey; apiRoot?: string; timeoutMs?: number },
): Promise<{ bot: BotRow; created: boolean }> {
  return botUpsert(pool, await prepareBot(r, opts));
}
