/**
 * capture.deliver for a worker without TELEGRAM_BOT_TOKEN: every enabled registered bot's captures,
 * each POSTed to the bot's own collector (its registration's capture URL), else to CAPTURE_URL. A
 * bot with neither has its captures left pending, unclaimed, until it gets one (a registration
 * change reaches the claim within seconds, with the bot registry's watch); a warning says so once
 * per bot. The claim is shared between the bots as for dispatch and outbound: one bot's slow or
 * dead collector fills only that bot's WORKER_BOT_CONCURRENCY slots.
 */
import type { BotWatch, ServedBot } from '../bots/watch';
import type { Logger } from '../observability/logger';
import type { JobKind } from '../queue/job-kind';
import { createCaptureKind, type CaptureJobRow } from './deliver';

export interface FleetCaptureOptions {
  bots: BotWatch;
  /** CAPTURE_URL: the collector of bots without one of their own (unset: none). */
  captureUrl?: string;
  /** CAPTURE_TIMEOUT. */
  timeoutMs: number;
  /** OPS_CHAT_ID: the alert chat of bots without an operators' chat of their own. */
  opsChatId: string | null;
  /** WORKER_BOT_CONCURRENCY. */
  perBot: number;
  logger: Logger;
  fetchImpl?: typeof fetch;
}

export function createFleetCaptureKind(opts: FleetCaptureOptions): JobKind<CaptureJobRow> {
  const logger = opts.logger.child({ component: 'capture' });
  // a bot not served (disabled, removed) has no collector: its captures wait for it, as in dispatch
  const urlOf = (bot: ServedBot | undefined): string | undefined =>
    bot ? (bot.capture_url ?? opts.captureUrl) : undefined;
  // the bots with a collector, computed again when the watch serves a new map (every re-read)
  let seen: ReadonlyMap<string, ServedBot> | undefined;
  let withCollector: string[] = [];
  const warned = new Set<string>();
  const botIds = (): readonly string[] => {
    const served = opts.bots.bots();
    if (served === seen) return withCollector;
    seen = served;
    withCollector = [];
    for (const bot of served.values()) {
      if (urlOf(bot)) {
        withCollector.push(bot.id);
        warned.delete(bot.id);
      } else if (!warned.has(bot.id)) {
        warned.add(bot.id);
        logger.warn(
          { botId: bot.id },
          'the bot has no capture URL and CAPTURE_URL is not set: its captures stay pending until one is set',
        );
      }
    }
    for (const id of warned) if (!served.has(id)) warned.delete(id);
    return withCollector;
  };
  botIds(); // the warnings of the bots served at start
  return createCaptureKind({
    timeoutMs: opts.timeoutMs,
    fetchImpl: opts.fetchImpl,
    opsChatId: opts.opsChatId,
    fleet: {
      botIds,
      urlOf: (id) => urlOf(opts.bots.bots().get(id)),
      opsChatOf: (id) => opts.bots.bots().get(id)?.ops_chat_id ?? null,
      perBot: opts.perBot,
    },
  });
}
