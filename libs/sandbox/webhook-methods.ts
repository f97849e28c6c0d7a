/** setWebhook / deleteWebhook / getWebhookInfo. */
import { TELEGRAM_SECRET_TOKEN_MAX } from '../telegram/limits';
import type { BotState, WebhookSettings } from './bot-state';
import type { WebhookInfo } from './types';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError, boolParam, clamp, intParam } from './http-io';
import { conflictByWebhook } from './polling';

export interface WebhookControl {
  startWebhook(bot: BotState, settings: WebhookSettings): void;
  stopWebhook(bot: BotState): void;
}

export function setWebhook(bot: BotState, params: Record<string, unknown>, ctl: WebhookControl): true {
  const url = typeof params.url === 'string' ? params.url.trim() : '';
  if (url === '') return deleteWebhook(bot, params, ctl);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BotApiError(400, TG_DESCRIPTIONS.badWebhookUrl);
  }
  // Telegram demands HTTPS on ports 443/80/88/8443; the sandbox also accepts plain http on any port.
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new BotApiError(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
  }
  let secretToken: string | undefined;
  if (params.secret_token !== undefined && params.secret_token !== '') {
    if (
      typeof params.secret_token !== 'string' ||
      !new RegExp(`^[A-Za-z0-9_-]{1,${TELEGRAM_SECRET_TOKEN_MAX}}$`).test(params.secret_token)
    ) {
      throw new BotApiError(400, TG_DESCRIPTIONS.badSecretToken);
    }
    secretToken = params.secret_token;
  }
  const settings: WebhookSettings = {
    url,
    maxConnections: clamp(intParam(params.max_connections, 40), 1, 100),
  };
  if (secretToken) settings.secretToken = secretToken;
  if (Array.isArray(params.allowed_updates)) {
    settings.allowedUpdates = params.allowed_updates.filter((x): x is string => typeof x === 'string');
  } else if (bot.webhook?.allowedUpdates) {
    settings.allowedUpdates = bot.webhook.allowedUpdates;
  }
  if (boolParam(params.drop_pending_updates)) bot.pending.clear();
  // A pending long poll cannot survive a webhook.
  if (bot.poll) bot.poll.finish(conflictByWebhook());
  bot.lastErrorDate = undefined;
  bot.lastErrorMessage = undefined;
  bot.webhook = settings;
  ctl.startWebhook(bot, settings);
  return true;
}

export function deleteWebhook(bot: BotState, params: Record<string, unknown>, ctl: WebhookControl): true {
  ctl.stopWebhook(bot);
  bot.webhook = null;
  if (boolParam(params.drop_pending_updates)) bot.pending.clear();
  return true;
}

export function getWebhookInfo(bot: BotState): WebhookInfo {
  return bot.webhookInfo();
}
