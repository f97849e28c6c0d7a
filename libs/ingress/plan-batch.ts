/**
 * Turns the raw items of one getUpdates answer (or one webhook body) into what the batch
 * transaction must write, applying the decode policy. Pure: no I/O.
 *
 * Offsets for items without an integer update_id. Such an item still occupies one update_id slot
 * in Telegram's stream, which we cannot read. It is confirmed for free when a later item of the
 * batch has an id N (offset N+1 covers it). When it trails the batch, the only offset that is
 * provably safe is `last known id + 2`: it confirms exactly the slot after the last known id, and
 * every update not yet seen has a larger id. A run of k such items is thus cleared in k polls,
 * never confirming anything unseen. At the very start of a stream (cursor 0, nothing before it in
 * the batch) there is no known id, so we halt rather than guess.
 */
import crypto from 'node:crypto';
import { DecodeFailure, DecodedUpdate, DecodeResult, decodeUpdate } from './decode';

export type DecodePolicy = 'stop' | 'quarantine';

export interface QuarantineItem extends DecodeFailure {
  sha256: string;
}

export interface BatchPlan {
  /** Decoded updates to store, in stream order, without duplicate update_ids. */
  updates: DecodedUpdate[];
  quarantine: QuarantineItem[];
  /** Cursor value once committed; null leaves it (webhook body without an update_id). */
  nextOffset: number | null;
  /** DECODE_POLICY=stop hit an undecodable update: why (no payload), and the offset it halts at. */
  halt: string | null;
  /**
   * Webhook with DECODE_POLICY=stop: the refused update, whose exact bytes are kept in
   * relay.quarantine (held: answered 500, Telegram redelivers it) before the 500.
   */
  held?: QuarantineItem;
  /** How the items arrived (recorded on quarantine rows); polling when absent. */
  transport?: 'polling' | 'webhook';
}

export interface PlanOptions {
  policy: DecodePolicy;
  /** Polling: the offset this batch was requested with (0 = start of stream, unknown). */
  offset: number;
  transport: 'polling' | 'webhook';
}

export function sha256Hex(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

function describe(f: DecodeFailure, afterId: number | null): string {
  const where =
    f.updateId !== null
      ? `update_id ${f.updateId}`
      : afterId !== null
        ? `the update after update_id ${afterId}`
        : 'the first update of the stream';
  return `${where} could not be decoded (${f.error})`;
}

export function planBatch(items: readonly string[], opts: PlanOptions): BatchPlan {
  return planDecoded(items.map(decodeUpdate), opts);
}

/** planBatch for updates already decoded (the webhook decodes its delivery before planning it). */
export function planDecoded(decoded: readonly DecodeResult[], opts: PlanOptions): BatchPlan {
  const updates: DecodedUpdate[] = [];
  const quarantine: QuarantineItem[] = [];
  const seen = new Set<number>();
  // The highest id of the batch, not of the batch and the offset: when Telegram reset its ids it
  // serves updates below the offset (the offset lies past its queue), and the next offset must
  // confirm those, not stay above them and be answered the same batch forever.
  let lastKnown: number | null = null;
  const before = opts.transport === 'polling' && opts.offset > 0 ? opts.offset - 1 : null;
  let maxId: number | null = null;
  let trailingUnknown = false;
  let halt: string | null = null;
  let held: QuarantineItem | undefined;

  for (const r of decoded) {
    if (r.ok) {
      const id = r.update.updateId;
      trailingUnknown = false;
      lastKnown = lastKnown === null ? id : Math.max(lastKnown, id);
      maxId = maxId === null ? id : Math.max(maxId, id);
      if (!seen.has(id)) {
        seen.add(id);
        updates.push(r.update);
      }
      continue;
    }
    const f = r.failure;
    if (opts.policy === 'stop') {
      const offsetNote =
        opts.transport === 'polling'
          ? `; DECODE_POLICY=stop halted polling at offset ${lastKnown === null ? opts.offset : lastKnown + 1}`
          : '; DECODE_POLICY=stop answered 500';
      halt = describe(f, lastKnown ?? before) + offsetNote;
      if (opts.transport === 'webhook') held = { ...f, sha256: sha256Hex(f.raw) };
      break;
    }
    quarantine.push({ ...f, sha256: sha256Hex(f.raw) });
    if (f.updateId !== null) {
      trailingUnknown = false;
      lastKnown = lastKnown === null ? f.updateId : Math.max(lastKnown, f.updateId);
      maxId = maxId === null ? f.updateId : Math.max(maxId, f.updateId);
    } else {
      trailingUnknown = true;
    }
  }

  let nextOffset: number | null;
  if (opts.transport === 'webhook') {
    nextOffset = maxId === null ? null : maxId + 1;
  } else if (trailingUnknown && halt === null) {
    lastKnown ??= before;
    if (lastKnown === null) {
      halt =
        'an update without an integer update_id arrived at the start of the stream (cursor 0); its offset cannot be derived safely, so polling halted';
      nextOffset = null;
    } else {
      nextOffset = lastKnown + 2;
    }
  } else {
    lastKnown ??= before;
    nextOffset = lastKnown === null ? null : lastKnown + 1;
  }
  return { updates, quarantine, nextOffset, halt, ...(held ? { held } : {}), transport: opts.transport };
}
