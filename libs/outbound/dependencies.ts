/**
 * Placeholder message ids in a row's params (a handler edited, deleted or replied to a message it
 * had just sent through the relay) become the real ids before the row is sent, learnt from the rows
 * that handed them out. Decided as an explicit value, before any budget is spent:
 *
 * | the rows holding the placeholders          | outcome                                          |
 * |--------------------------------------------|--------------------------------------------------|
 * | all delivered with an id at that position  | Ready(params with the real ids)                  |
 * | one failed (or delivered without that id)  | Failed: RELAY_DEPENDENCY_FAILED, no Bot API call |
 * | one pending or delivering                  | Pending: RELAY_DEPENDENCY_PENDING, retried soon  |
 * | no row holds one                           | Unknown: RELAY_UNKNOWN_PLACEHOLDER               |
 */
import type { Queryable } from '../db/pool';
import { placeholdersIn, resolvePlaceholders } from '../telegram/placeholders';
import { outboundPlaceholderOwners } from './queries';

/** How soon a row waiting for an earlier message is tried again (uncounted). */
export const DEPENDENCY_RETRY_MS = 500;

export type Dependencies =
  | { type: 'ready'; params: Record<string, unknown> | undefined }
  | { type: 'failed'; errorCode: 'RELAY_DEPENDENCY_FAILED' | 'RELAY_UNKNOWN_PLACEHOLDER'; reason: string }
  | { type: 'pending'; reason: string };

export async function resolveDependencies(
  db: Queryable,
  botId: string,
  params: Record<string, unknown> | null | undefined,
): Promise<Dependencies> {
  if (!params) return { type: 'ready', params: undefined };
  const wanted = placeholdersIn(params);
  if (wanted.length === 0) return { type: 'ready', params: undefined };
  const owners = await outboundPlaceholderOwners(db, botId, wanted);
  const real = new Map<number, number>();
  for (const o of owners) {
    const positions = o.placeholders.map(Number);
    for (const p of wanted) {
      const i = positions.indexOf(p);
      if (i < 0) continue;
      if (o.state === 'failed')
        return {
          type: 'failed',
          errorCode: 'RELAY_DEPENDENCY_FAILED',
          reason: `depends on message ${o.msgId}, which failed: not sent`,
        };
      if (o.state !== 'delivered')
        return { type: 'pending', reason: `waits for message ${o.msgId} (${o.state}) to be delivered` };
      const id = o.telegramMessageIds?.[i];
      if (id === undefined || id === null)
        return {
          type: 'failed',
          errorCode: 'RELAY_DEPENDENCY_FAILED',
          reason: `depends on message ${o.msgId}, delivered without a message id at position ${i + 1}: not sent`,
        };
      real.set(p, Number(id));
    }
  }
  const resolved = resolvePlaceholders(params, real);
  if (resolved.missing.length > 0)
    return {
      type: 'failed',
      errorCode: 'RELAY_UNKNOWN_PLACEHOLDER',
      reason: `names placeholder message id ${resolved.missing[0]}, which no message of this bot handed out: not sent`,
    };
  return { type: 'ready', params: resolved.params };
}
