/**
 * One start/stop for every long-running part (claim loops, poller, webhook ingress, JetStream
 * bridge, wake listener, admin server), after River's `startstop`: start runs a body once in the
 * background with an AbortSignal; stop aborts it, waits for it and runs the part's own finishing
 * once, however many callers stop it; a body that ends without being stopped is a death the
 * process can see (`died`), never a silent end of work.
 */
export type LifecycleState = 'new' | 'running' | 'stopping' | 'stopped';

export class Lifecycle {
  private readonly controller = new AbortController();
  private body: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private current: LifecycleState = 'new';
  private resolveDied!: (reason: string) => void;
  /** Resolves with a reason when the body ends (throws or returns) without stop() asked. */
  readonly died = new Promise<string>((resolve) => (this.resolveDied = resolve));

  constructor(readonly name: string) {}

  get state(): LifecycleState {
    return this.current;
  }

  /** Aborted once stop() is called: the body's loops and waits end on it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get running(): boolean {
    return this.current === 'running';
  }

  /** Runs `body` in the background. Only the first call starts; after stop() nothing starts. */
  start(body: (signal: AbortSignal) => Promise<void>): boolean {
    if (this.current !== 'new') return false;
    this.current = 'running';
    this.body = (async () => body(this.controller.signal))().then(
      () => this.ended(undefined),
      (err: unknown) => this.ended(err),
    );
    return true;
  }

  /**
   * Aborts the signal, waits for the body, then runs `finish` (release claims, a lease, close a
   * connection). Idempotent and safe before start: every caller gets the first call's promise.
   */
  stop(finish?: () => Promise<void>): Promise<void> {
    this.stopping ??= (async () => {
      if (this.current !== 'stopped') this.current = 'stopping';
      this.controller.abort();
      await this.body;
      try {
        await finish?.();
      } finally {
        this.current = 'stopped';
      }
    })();
    return this.stopping;
  }

  private ended(err: unknown): void {
    if (this.controller.signal.aborted) return;
    this.current = 'stopped';
    const why =
      err === undefined
        ? 'ended'
        : err instanceof Error
          ? err.message
          : typeof err === 'string'
            ? err
            : `a thrown ${typeof err}`;
    this.resolveDied(`${this.name} ${err === undefined ? why : `crashed: ${why}`}`);
  }
}
