/**
 * The alert outbox: relay alerts (relay.outbound rows of kind alert) published on
 * NATS_ALERT_SUBJECT from a cursor, advanced only after NATS took them (flush), so a failed
 * publish is retried on the next poll. Best effort: a failure is logged, never fatal.
 */
import type { Pool } from 'pg';
import { withTransaction } from '../db/pool';
import { withTimeout } from '../lifecycle/timers';
import { nats, type NatsConnection } from './nats';
import { AlertToPublish, jetstreamAlertAdvance, jetstreamAlertClaim } from './queries';

/** Header on the alerts we publish (loop guard: such a message is never sent to Telegram). */
export const ALERT_HEADER = 'Tg-Relay-Alert';
export const ALERT_POLL_MS = 1_000;
/** Alerts published per poll. */
const ALERT_BATCH = 100;
const FLUSH_TIMEOUT_MS = 5_000;

/**
 * Publishes the alerts past the cursor on `subject` and advances the cursor past them;
 * `published` hears how many, before the cursor's transaction commits.
 */
export async function publishAlerts(
  pool: Pool,
  conn: NatsConnection,
  subject: string,
  published: (count: number) => void,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    const claimed = await jetstreamAlertClaim(client, subject, ALERT_BATCH);
    if (!claimed || claimed.alerts.length === 0) return;
    for (const a of claimed.alerts) {
      const h = nats.headers();
      h.set('Nats-Msg-Id', `tg-relay-alert:${a.msgId}`.slice(0, 256));
      h.set(ALERT_HEADER, '1');
      conn.publish(subject, JSON.stringify(alertJson(a)), { headers: h });
    }
    await withTimeout(conn.flush(), FLUSH_TIMEOUT_MS, 'NATS flush');
    await jetstreamAlertAdvance(client, subject, claimed.alerts[claimed.alerts.length - 1].id);
    published(claimed.alerts.length);
  });
}

/** The alert JSON on NATS_ALERT_SUBJECT: TelegramOutbound-shaped (kind alert) plus what failed. */
export function alertJson(a: AlertToPublish): Record<string, unknown> {
  return {
    msg_id: a.msgId,
    chat_id: null,
    text: a.text,
    parse_mode: null,
    kind: 'alert',
    source: 'tg-relay',
    failed: a.failed
      ? {
          outbound_id: a.failed.id,
          msg_id: a.failed.msgId,
          chat_id: a.failed.chatId,
          target_chat_id: a.failed.targetChatId,
          publisher_kind: a.failed.publisherKind,
          attempts: a.failed.attempts,
          last_status: a.failed.lastStatus,
          reason: a.failed.reason,
          failed_at: a.failed.failedAt,
        }
      : null,
    created_at: a.createdAt,
  };
}
