/** Waiting, for every loop and client in the relay: one implementation, so each behaves the same. */

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects: the caller checks
 * `signal.aborted`). `unref`: the wait does not keep the process alive (a fault's delay).
 */
export function sleep(ms: number, signal?: AbortSignal, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (opts.unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `p`, or a rejection naming `what` once `ms` have passed (a peer that never answers must not hang us). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * `p`, but given up on (resolving) after `ms`: a dying process waits this long for its parts to stop,
 * and no longer (a stuck part must not keep it alive). A rejection of `p` in time still rejects.
 */
export async function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
