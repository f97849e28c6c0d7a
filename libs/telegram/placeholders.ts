/**
 * Placeholder message ids. A relayed call (REPLY_MODE=outbound) resolves at once, before Telegram
 * has seen it, so the `message_id`s in its result are placeholders: negative integers (Telegram's
 * own message ids are positive, so a placeholder is never a real id and never 0), random in a range
 * wide enough that two never meet. The outbound row keeps the placeholders it handed out; a later
 * call that passes one where a message id goes is sent with the real id, learnt when that earlier
 * message was delivered.
 */
import { randomInt } from 'node:crypto';

/** Placeholders lie in [-(2^53 - 1), -2^41]: far from any id Telegram uses, safe as JSON numbers. */
const PLACEHOLDER_MAX = -(2 ** 41);
const PLACEHOLDER_MIN = -Number.MAX_SAFE_INTEGER;

export function newPlaceholder(): number {
  // randomInt takes a range of at most 2^48; two draws cover the 52-bit span
  const high = randomInt(0, 2 ** 24);
  const low = randomInt(0, 2 ** 28);
  return Math.max(PLACEHOLDER_MIN, PLACEHOLDER_MAX - (high * 2 ** 28 + low));
}

export function isPlaceholder(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value <= PLACEHOLDER_MAX;
}

/** Where a Bot API call names a message of a chat by id: only these places are resolved. */
type Slot = { get: () => unknown; set: (id: number) => void };

function slotsOf(params: Record<string, unknown>): Slot[] {
  const slots: Slot[] = [];
  const field = (obj: Record<string, unknown>, key: string) =>
    slots.push({ get: () => obj[key], set: (id) => (obj[key] = id) });
  field(params, 'message_id');
  field(params, 'reply_to_message_id');
  const rp = params.reply_parameters;
  if (rp && typeof rp === 'object' && !Array.isArray(rp)) field(rp as Record<string, unknown>, 'message_id');
  const ids = params.message_ids;
  if (Array.isArray(ids)) {
    const list: unknown[] = ids;
    list.forEach((_, i) => slots.push({ get: () => list[i], set: (id) => (list[i] = id) }));
  }
  return slots;
}

/** The placeholders a call's parameters use where a message id goes, each once. */
export function placeholdersIn(params: Record<string, unknown>): number[] {
  const found = new Set<number>();
  for (const s of slotsOf(params)) {
    const v = s.get();
    if (isPlaceholder(v)) found.add(v);
  }
  return [...found];
}

/**
 * A deep copy of `params` with every placeholder in a message-id place replaced by its real id.
 * Returns the placeholders `real` has no id for (the call must not be sent with them).
 */
export function resolvePlaceholders(
  params: Record<string, unknown>,
  real: ReadonlyMap<number, number>,
): { params: Record<string, unknown>; missing: number[] } {
  const copy = structuredClone(params);
  const missing = new Set<number>();
  for (const s of slotsOf(copy)) {
    const v = s.get();
    if (!isPlaceholder(v)) continue;
    const id = real.get(v);
    if (id === undefined) missing.add(v);
    else s.set(id);
  }
  return { params: copy, missing: [...missing] };
}
