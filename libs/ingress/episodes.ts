/**
 * "Log once per episode": the first failure of a kind is logged at its level, repeats only at
 * debug, and the recovery once at info with how many attempts it took. A 409 storm or a database
 * outage then produces two log lines, not one per poll.
 */
import type { Logger } from '../observability/logger';

export class Episodes {
  private readonly open = new Map<string, { since: number; count: number }>();

  constructor(private readonly logger: Logger) {}

  /** Records one failure; logs it only when it starts an episode. Returns the attempt number (0-based). */
  fail(kind: string, level: 'warn' | 'error', fields: Record<string, unknown>, message: string): number {
    const ep = this.open.get(kind);
    if (ep) {
      ep.count++;
      this.logger.debug({ ...fields, episode: kind, attempt: ep.count }, message);
      return ep.count - 1;
    }
    this.open.set(kind, { since: Date.now(), count: 1 });
    this.logger[level]({ ...fields, episode: kind }, message);
    return 0;
  }

  /** Ends an episode (if one is open) with a single recovery line. */
  recover(kind: string, message: string): void {
    const ep = this.open.get(kind);
    if (!ep) return;
    this.open.delete(kind);
    this.logger.info({ episode: kind, failures: ep.count, durationMs: Date.now() - ep.since }, message);
  }

  attempts(kind: string): number {
    return this.open.get(kind)?.count ?? 0;
  }
}
