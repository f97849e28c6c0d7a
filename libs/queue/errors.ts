/** An error of the worker engine with a stable code. */
export class QueueError extends Error {
  constructor(
    readonly code: 'RELAY_QUEUE_NOT_MIGRATED' | 'RELAY_QUEUE_STOPPED' | 'RELAY_HANDLER_THREW' | 'RELAY_CLAIM_LOST',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'QueueError';
  }
}

/** A short, single-line description of any thrown value, for logs-free audit columns. */
export function shortError(err: unknown, max = 300): string {
  const e = err as { message?: unknown; code?: unknown } | null;
  const msg = e && typeof e.message === 'string' ? e.message : String(err);
  const line = msg.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
