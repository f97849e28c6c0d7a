/**
 * The two kinds of per-bot ingress unit a fleet poller runs (fleet.ts decides which bots): a poller
 * (INGRESS=polling), or a webhook unit routed on the process's one webhook server (INGRESS=webhook).
 * A webhook unit's path and secret are the bot's own (webhook-keys.ts); its route exists only while
 * the unit runs, so a bot this process does not serve (another poller holds it, it was disabled or
 * removed) answers 404 here and Telegram retries it, at the URL the bot's lease owner registers.
 */
import type { Pool } from 'pg';
import type { JobLedger } from '../db/boss';
import type { FleetUnit, FleetUnitFactory } from './fleet';
import type { DecodePolicy } from './plan-batch';
import { createPoller } from './poller';
import { webhookUrl } from './webhook-ingress';
import type { FleetWebhookKeys } from './webhook-keys';
import type { WebhookServer } from './webhook-server';
import { createWebhookUnit } from './webhook-unit';

export interface FleetUnitOptions {
  pool: Pool;
  boss: JobLedger;
  owner: string;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  dispatchUnauthorized: boolean;
}

export function pollUnits(o: FleetUnitOptions): FleetUnitFactory {
  return (bot, api, logger) => createPoller({ ...o, api, logger, botId: bot.id, allowedChatIds: bot.allowed_chat_ids });
}

export interface WebhookUnitsOptions extends FleetUnitOptions {
  server: WebhookServer;
  keys: FleetWebhookKeys;
  /** WEBHOOK_PUBLIC_URL: this poller's base URL; each bot's path is appended. */
  publicUrl: string;
  /** OPS_CHAT_ID: alerts of a bot without its own operators' chat. */
  opsChatId: string | null;
}

export function webhookUnits(o: WebhookUnitsOptions): FleetUnitFactory {
  return (bot, api, logger): FleetUnit => {
    const pathKey = o.keys.pathKey(bot.id);
    const unit = createWebhookUnit({
      ...o,
      api,
      logger,
      botId: bot.id,
      allowedChatIds: bot.allowed_chat_ids,
      secret: o.keys.secret(bot.id),
      url: webhookUrl(o.publicUrl, pathKey),
      opsChatId: bot.ops_chat_id ?? o.opsChatId,
    });
    let unroute: (() => void) | undefined;
    // a unit that ends by itself (401, crash) stops taking deliveries too: its lease is released
    const done = unit.done.then((exit) => (unroute?.(), exit));
    return {
      start() {
        // routed before the loop can register the webhook, so Telegram's first delivery finds it
        unroute = o.server.add(pathKey, unit.route);
        unit.start();
      },
      stop() {
        // new deliveries answer 404 from now on; those in flight finish before the lease is released
        unroute?.();
        return unit.stop();
      },
      done,
      events: unit.events,
      holdsLease: () => unit.holdsLease(),
      problem: () => unit.status().deliveryProblem,
    };
  };
}
