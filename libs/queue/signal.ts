/**
 * A wake-up flag a loop can wait on: `notify()` before `wait()` is not lost (the next wait returns
 * at once), and many notifies while the loop is busy collapse into one.
 */
export class WakeSignal {
  private pending = false;
  private waiter: (() => void) | undefined;

  /**
   * Takes a pending notify without waiting: true once per notify. A loop that acts on a pending
   * notify must consume it, or it sees the same notify forever.
   */
  consume(): boolean {
    const was = this.pending;
    this.pending = false;
    return was;
  }

  notify(): void {
    this.pending = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** Resolves on notify or after `timeoutMs` (never rejects). Returns true if notified. */
  wait(timeoutMs: number): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          if (this.waiter === done) this.waiter = undefined;
          resolve(false);
        },
        Math.max(0, timeoutMs),
      );
      const done = () => {
        clearTimeout(timer);
        this.pending = false;
        resolve(true);
      };
      this.waiter = done;
    });
  }
}
