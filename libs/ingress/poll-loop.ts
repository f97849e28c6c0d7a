/**
 * The poller's state machine:
 *
 *   standby ──acquire──► owner: getUpdates(offset) ─► plan ─► ONE fenced transaction ─► offset = last+1
 *      ▲                   │ empty long poll → fenced progress write
 *      └──lease lost───────┘ failure → same offset after backoff
 *
 * The offset sent to Telegram only ever comes from a committed cursor (at acquisition) or from a
 * committed batch, so getUpdates never confirms an update that is not durable. Each failure is
 * logged once per episode; nothing a peer answers halts polling (libs/ingress/get-updates.ts says
 * what each failure means). A 401 before the token ever worked ends the loop with `unauthorized`.
 */
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { storableText } from '../db/storable-json';
import { TelegramApiError } from '../telegram';
import { timedPersist } from './batch-timing';
import { traceIngressBatch } from './batch-span';
import type { Episodes } from './episodes';
import { LeaseLostError } from './errors';
import type { IngressEvents } from './events';
import { GET_UPDATES_RECOVERIES, GetUpdatesTransport, PollFailure } from './get-updates';
import type { Lease } from './lease';
import { takeLeaseOrWait } from './lease-standby';
import { logCaptureConflicts, logReusedIds, persistBatch, PersistResult } from './persist-batch';
import { BatchPlan, DecodePolicy, planBatch } from './plan-batch';
import { cursorRecordPollError, cursorRecordProgress, Fence, PollErrorKind } from './queries';
import type { Watchdog } from './watchdog';

/** An empty long poll answered sooner than this was not held open (timeout is at least 1 s)… */
const EARLY_EMPTY_POLL_MS = 500;
/** …and the next one waits until this much time has passed since the last was sent. */
const EMPTY_POLL_MIN_MS = 1_000;

/**
 * How ingress ended: stop() was called, Telegram rejected the token, a bug ended the loop, or the
 * watchdog found the generation stalled (the process should exit non-zero and be restarted).
 */
export type PollerExit =
  | { reason: 'stopped' }
  | { reason: 'unauthorized'; message: string }
  | { reason: 'crashed'; message: string }
  | { reason: 'stalled'; message: string };

export interface PollerStatus {
  state: 'idle' | 'standby' | 'polling' | 'halted' | 'stopped';
  generation: number | null;
  offset: number | null;
  haltedReason: string | null;
  batches: number;
  updates: number;
}

export interface PollLoopOptions {
  pool: Pool;
  boss: JobLedger;
  botId: string;
  logger: Logger;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  allowedChatIds: ReadonlySet<string>;
  dispatchUnauthorized: boolean;
  deleteWebhookOnAcquire: boolean;
  /** Told how each batch transaction ended. */
  events: IngressEvents;
  lease: Lease;
  getUpdates: GetUpdatesTransport;
  watchdog: Watchdog;
  episodes: Episodes;
  /** Delay before retry number `attempt` (0-based) of a failure episode. */
  backoff: (attempt: number) => number;
}

export class PollLoop {
  state: PollerStatus['state'] = 'idle';
  offset: number | null = null;
  haltedReason: string | null = null;
  batches = 0;
  updates = 0;
  exit: PollerExit = { reason: 'stopped' };
  /**
   * Aborted to cut a sleep short (stop, lease lost). A lost lease does not abort the long poll in
   * flight: its batch is still offered to the fenced commit, which decides (a new owner's own
   * getUpdates terminates that poll anyway, with a 409).
   */
  private wake = new AbortController();

  constructor(private readonly o: PollLoopOptions) {}

  interrupt(): void {
    this.wake.abort();
    this.wake = new AbortController();
  }

  leaseLost(): void {
    this.haltedReason = null;
    this.interrupt();
  }

  /** Until `signal` aborts (stop) or the token is refused; the lease is released either way. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        if (!this.o.lease.fence()) await this.acquire();
        else await this.pollOnce(signal);
      }
    } catch (err) {
      if (!(err instanceof TelegramApiError && err.errorCode === 401)) throw err;
      const message =
        'Telegram rejected the bot token (401 Unauthorized): check TELEGRAM_BOT_TOKEN; the poller stopped';
      this.o.logger.fatal({ description: err.description }, message);
      this.exit = { reason: 'unauthorized', message };
    } finally {
      this.state = 'stopped';
      this.o.watchdog.stop();
      await this.o.lease.release();
    }
  }

  /** A wait that stop() and a lost lease cut short (the signal is read now: interrupt() replaces it). */
  private pause(ms: number): Promise<void> {
    return sleep(ms, this.wake.signal);
  }

  private async acquire(): Promise<void> {
    this.state = 'standby';
    const { lease, episodes, leaseTtlMs, backoff } = this.o;
    const got = await takeLeaseOrWait({ lease, episodes, leaseTtlMs, backoff, pause: (ms) => this.pause(ms) });
    if (!got) return;
    this.offset = got.nextOffset;
    this.haltedReason = null;
    this.o.watchdog.progressed();
    this.o.logger.info({ generation: got.generation, offset: this.offset }, 'ingress lease acquired: polling');
    if (this.o.deleteWebhookOnAcquire) await this.o.getUpdates.removeStaleWebhook();
  }

  private async pollOnce(signal: AbortSignal): Promise<void> {
    const fence = this.o.lease.fence();
    if (!fence || this.offset === null) return;
    this.state = this.haltedReason ? 'halted' : 'polling';
    if (this.haltedReason) {
      // Halted: keep the lease (so no standby replays the same failure) and wait for stop.
      await this.pause(this.o.leaseTtlMs);
      return;
    }
    const requested = this.offset;
    const answer = await this.o.getUpdates.poll(requested, signal);
    if (answer.kind === 'aborted') return;
    if (answer.kind === 'failed') return this.backOff(answer.failure, fence);
    for (const [kind, message] of GET_UPDATES_RECOVERIES) this.o.episodes.recover(kind, message);
    const plan = planBatch(answer.items, { policy: this.o.decodePolicy, offset: requested, transport: 'polling' });
    if (answer.items.length > 0) this.o.watchdog.updatesWaiting();
    if (plan.updates.length === 0 && plan.quarantine.length === 0 && !plan.halt)
      return this.emptyPoll(fence, answer.sentAt);
    const call = { start: answer.startedAt, end: new Date(), status: answer.status, offset: requested };
    await traceIngressBatch({ operation: 'getUpdates', botId: this.o.botId, count: answer.items.length, call }, () =>
      this.commit(plan, fence, requested),
    );
  }

  /** Logs the failure once per episode, says it in relay.cursor once, and waits. */
  private async backOff(failure: PollFailure, fence: Fence): Promise<void> {
    const n = this.o.episodes.fail(failure.episode, failure.level, failure.fields, failure.message);
    if (n === 0 && failure.pollError) await this.recordPollError(fence, failure.pollError.kind, failure.pollError.text);
    if (failure.recheckLease && !(await this.o.lease.renewNow())) return;
    await this.pause(failure.waitMs ?? this.o.backoff(n));
  }

  /** Says in relay.cursor why getUpdates fails (readiness shows it); best effort. */
  private async recordPollError(fence: Fence, kind: PollErrorKind, error: string): Promise<void> {
    try {
      // a peer's description is peer content: bounded, and storable in a text column
      await cursorRecordPollError(this.o.pool, this.o.botId, fence, kind, storableText(error).slice(0, 500));
    } catch {
      // the database being away is reported by the lease and persist paths
    }
  }

  /** An empty long poll: progress for this generation (fenced; also extends the lease). */
  private async emptyPoll(fence: Fence, sentAt: number): Promise<void> {
    try {
      if (!(await cursorRecordProgress(this.o.pool, this.o.botId, fence, this.o.leaseTtlMs))) {
        this.o.lease.markLost('fenced progress write rejected');
        return;
      }
      this.o.episodes.recover('persist', 'database reachable again');
      this.o.watchdog.progressed();
    } catch (err) {
      const n = this.o.episodes.fail('persist', 'error', { err }, 'could not record progress');
      await this.pause(this.o.backoff(n));
      return;
    }
    const longPollSeconds = this.o.getUpdates.longPollSeconds;
    if (longPollSeconds === 0) {
      await this.pause(this.o.pollTimeoutMs);
      return;
    }
    // Telegram holds an empty long poll open for `timeout` seconds; a peer answering at once (a
    // proxy, a broken self-hosted Bot API) would otherwise be polled, and progress written, in
    // a tight loop
    const heldMs = performance.now() - sentAt;
    if (heldMs < EARLY_EMPTY_POLL_MS) {
      this.o.episodes.fail(
        'early-empty',
        'warn',
        { timeoutS: longPollSeconds, answeredInMs: Math.round(heldMs) },
        'getUpdates answered an empty long poll at once (the Bot API does not hold it open): ' +
          'polling at most once a second',
      );
      await this.pause(EMPTY_POLL_MIN_MS - heldMs);
    } else {
      this.o.episodes.recover('early-empty', 'getUpdates holds empty long polls open again');
    }
  }

  /**
   * Runs the batch transaction under the generation that fetched the batch (even if the lease was
   * lost locally meanwhile: the database fence decides). False when it did not commit (then the
   * same offset is polled again).
   */
  private async commit(plan: BatchPlan, fence: Fence, requested: number): Promise<boolean> {
    const o = this.o;
    try {
      const r = await timedPersist(o.events, 'polling', () =>
        persistBatch({ pool: o.pool, boss: o.boss }, plan, {
          botId: o.botId,
          fence,
          leaseTtlMs: o.leaseTtlMs,
          allowedChatIds: o.allowedChatIds,
          dispatchUnauthorized: o.dispatchUnauthorized,
          halt: null,
        }),
      );
      this.committed(plan, fence, requested, r);
      return true;
    } catch (err) {
      if (err instanceof LeaseLostError) {
        o.logger.warn(
          { err, generation: fence.generation },
          'batch rejected by the lease fence (another replica owns ingress now); nothing was committed',
        );
        o.lease.markLost('fenced write rejected');
        return false;
      }
      o.watchdog.settledWithError();
      const n = o.episodes.fail(
        'persist',
        'error',
        { err, offset: this.offset },
        'batch transaction failed; nothing committed, the same offset will be polled again',
      );
      await this.pause(o.backoff(n));
      o.watchdog.settledWithError();
      return false;
    }
  }

  /** The batch is durable: the offset moves past it, and what it held is said. */
  private committed(plan: BatchPlan, fence: Fence, requested: number, r: PersistResult): void {
    const logger = this.o.logger;
    this.o.episodes.recover('persist', 'batch persisted again');
    this.o.watchdog.progressed();
    this.batches++;
    this.updates += r.stored;
    if (plan.nextOffset !== null && plan.nextOffset < requested)
      logger.warn(
        { requested, offset: plan.nextOffset, generation: fence.generation },
        'getUpdates served update_ids below the offset (Telegram reset its update ids): the cursor follows them',
      );
    if (plan.nextOffset !== null) this.offset = plan.nextOffset;
    logger.debug({ generation: fence.generation, offset: this.offset, ...r }, 'batch committed');
    if (r.quarantined > 0)
      logger.warn(
        { quarantined: r.quarantined, generation: fence.generation },
        'undecodable updates quarantined (DECODE_POLICY=quarantine)',
      );
    if (r.captureConflicts.length > 0) logCaptureConflicts(logger, r, fence.generation);
    if (r.reused > 0) logReusedIds(logger, r, fence.generation);
    if (plan.halt) {
      this.haltedReason = plan.halt;
      logger.error(
        { reason: plan.halt, offset: this.offset },
        'ingress halted by DECODE_POLICY=stop; fix or set DECODE_POLICY=quarantine, then restart the poller',
      );
    }
  }
}
