/**
 * How far ahead of sending a broadcast is fed. A minute of the bot's bulk rate waiting in
 * relay.outbound is enough for any pause in feeding (a feeder tick, a worker restart) to go
 * unnoticed, and little enough that pause/cancel act mostly on staged recipients, not on rows.
 */

/** Seconds of sending a broadcast has pending at most; it is topped up when below half of it. */
export const FEED_AHEAD_SECONDS = 60;
/** Rows one feed transaction makes at most (short transactions under the bot's bulk lock). */
export const FEED_CHUNK_MAX = 2_000;

/** `rows`: the pending rows a broadcast keeps at `ratePerSecond`; `chunk`: what one feed may add. */
export function feedAhead(ratePerSecond: number): { rows: number; chunk: number } {
  const rows = Math.max(1, Math.ceil(Math.max(0, ratePerSecond) * FEED_AHEAD_SECONDS));
  return { rows, chunk: Math.min(FEED_CHUNK_MAX, rows) };
}
