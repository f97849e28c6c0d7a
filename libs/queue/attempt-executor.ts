import { performance } from 'node:perf_hooks';
import type { Logger } from '../observability/logger';
import type { BackoffPolicy } from './backoff';
import { Clock, jsNow } from './clock';
import { shortError } from './errors';
import type { Finished, Held } from './held-claims';
import type { JobKind } from './job-kind';
import { Outcome } from './outcome';
import { decideSettlement } from './settlement';

/** Runs one claimed job's attempt to the outcome the settler writes. */
export interface AttemptExecutor<Row, Effects> {
  /** The finished attempt, or undefined if its claim was given back at shutdown meanwhile. */
  run(h: Held<Row>): Promise<Finished<Row, Effects> | undefined>;
}

export interface AttemptExecutorDeps {
  workerId: string;
  logger: Logger;
  clock?: Clock;
  retry: BackoffPolicy;
  random?: () => number;
}

export function createAttemptExecutor<Row, Effects>(
  kind: JobKind<Row, Effects>,
  deps: AttemptExecutorDeps,
): AttemptExecutor<Row, Effects> {
  const { workerId, logger, clock } = deps;
  return {
    async run(h) {
      const { job } = h;
      const startedAt = jsNow(clock);
      const t0 = performance.now();
      let jobLogger: Logger | undefined; // created on first use: pino's child() is not free at thousands of jobs/s
      const ctx = {
        signal: h.ctl.signal,
        workerId,
        get logger() {
          return (jobLogger ??= logger.child({ jobId: job.jobId, id: job.id, attempt: job.attempt }));
        },
      };
      let outcome: Outcome<Effects>;
      try {
        outcome = await kind.execute(job, ctx);
      } catch (err) {
        outcome = Outcome.retry<Effects>(undefined, { errorCode: 'RELAY_HANDLER_THREW', error: shortError(err) });
      }
      if (h.phase === 'released') {
        // given back at shutdown; its outcome is not ours to write, nor its own writes to commit
        await outcome.transaction?.end(false).catch(() => undefined);
        return undefined;
      }
      h.phase = 'settling';
      const decision = decideSettlement(job, outcome, deps.retry, deps.random);
      const durationMs = Math.round(performance.now() - t0);
      return { job, outcome, decision, startedAt, finishedAt: jsNow(clock), durationMs };
    },
  };
}
