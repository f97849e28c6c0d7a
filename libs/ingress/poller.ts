/**
 * The durable getUpdates loop of one bot.
 *
 *   standby ──acquire──► owner: getUpdates(offset) ─► plan ─► ONE fenced transaction ─► offset = last+1
 *      ▲                   │ empty long poll → fenced progress write
 *      └──lease lost───────┘ failure → same offset after backoff
 *
 * The offset sent to Telegram only ever comes from a committed cursor (at acquisition) or from a
 * committed batch, so getUpdates never confirms an update that is not durable. Errors: network,
 * 5xx and answers that are not the Bot API's (a proxy's HTML page, a truncated body) → capped
 * exponential backoff with jitter; 429 → wait retry_after; 409 → back off and re-check the lease;
 * 401/403/404 (token or API root wrong) → backoff too, shown in readiness (relay.cursor.poll_error),
 * except a 401 before the token ever worked in this process: that is a typo, reported at once
 * (`done` resolves with `unauthorized`, exit 78). Each is logged once per episode. Nothing a peer
 * answers halts polling.
 */
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { storableText } from '../db/storable-json';
import { BotApiClient, ResponseParameters, TelegramApiError, TelegramNetworkError } from '../telegram';
import {
  BackoffPolicy,
  backoffDelay,
  INGRESS_BACKOFF_BASE_MS_DEFAULT,
  INGRESS_BACKOFF_CAP_MS_DEFAULT,
} from './backoff';
import { sleep } from '../lifecycle/timers';
import { traceIngressBatch } from './batch-span';
import { Episodes } from './episodes';
import { LeaseLostError } from './errors';
import { scanUpdatesAnswer } from './json-scan';
import { createLease, Lease } from './lease';
import { logCaptureConflicts, logReusedIds, persistBatch } from './persist-batch';
import { measuredPersist } from './batch-metrics';
import type { GetUpdatesResult, IngressMetrics } from '../observability/metrics';
import { BatchPlan, DecodePolicy, planBatch } from './plan-batch';
import { cursorRecordPollError, cursorRecordProgress, Fence, PollErrorKind } from './queries';

export const GET_UPDATES_LIMIT = 100;
/** Telegram clamps `timeout` to 50 s. */
const MAX_LONG_POLL_SECONDS = 50;
/** An empty long poll answered sooner than this was not held open (timeout is at least 1 s)… */
const EARLY_EMPTY_POLL_MS = 500;
/** …and the next one waits until this much time has passed since the last was sent. */
const EMPTY_POLL_MIN_MS = 1_000;
/** Extra time the HTTP request gets beyond the long-poll timeout before we call it lost. */
const LONG_POLL_GRACE_MS = 10_000;
/** Bot API statuses that mean the configuration (token, API root) is wrong, not the update. */
const CONFIGURATION_STATUSES = new Set([401, 403, 404]);

export interface PollerOptions {
  pool: Pool;
  boss: JobLedger;
  api: BotApiClient;
  botId: string;
  /** This replica's lease owner id (unique per process). */
  owner: string;
  logger: Logger;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  allowedChatIds: readonly string[];
  dispatchUnauthorized?: boolean;
  backoff?: Partial<BackoffPolicy>;
  random?: () => number;
  /** On acquiring the lease, remove a webhook left from INGRESS=webhook (default true). */
  deleteWebhookOnAcquire?: boolean;
  /** Watchdog threshold (default 2 × pollTimeoutMs); `false` turns the watchdog off. */
  watchdogMs?: number | false;
  /** Injectable clock for the watchdog (default Date.now). */
  now?: () => number;
  /** METRICS_PORT: getUpdates results, batch transaction time, updates committed, lease state. */
  metrics?: IngressMetrics;
}

/** How long the watchdog waits for the lease release of a stalled poller before giving up on it. */
const WATCHDOG_RELEASE_TIMEOUT_MS = 2_000;

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

export interface Poller {
  start(): void;
  /** Finishes the in-flight batch (if any), releases the lease. Idempotent, safe before start(). */
  stop(): Promise<void>;
  /** Resolves when the loop ends: after stop(), or by itself on 401. */
  readonly done: Promise<PollerExit>;
  status(): PollerStatus;
}

export function createPoller(opts: PollerOptions): Poller {
  const logger = opts.logger;
  const policy: BackoffPolicy = {
    baseMs: opts.backoff?.baseMs ?? INGRESS_BACKOFF_BASE_MS_DEFAULT,
    capMs: opts.backoff?.capMs ?? INGRESS_BACKOFF_CAP_MS_DEFAULT,
  };
  const random = opts.random ?? Math.random;
  const allowed = new Set(opts.allowedChatIds.map(String));
  const longPollSeconds = Math.min(MAX_LONG_POLL_SECONDS, Math.floor(opts.pollTimeoutMs / 1000));
  const episodes = new Episodes(logger);
  const metrics = opts.metrics;
  const counted = (result: GetUpdatesResult) => metrics?.getUpdates.inc({ result });

  let started = false;
  let stopping = false;
  let offset: number | null = null;
  let haltedReason: string | null = null;
  let state: PollerStatus['state'] = 'idle';
  let batches = 0;
  let updatesStored = 0;
  /** Telegram accepted the token at least once in this process (a later 401 is then retried). */
  let tokenAccepted = false;
  /** Aborted by stop(): interrupts the long poll. */
  const stopCtl = new AbortController();
  /**
   * Aborted to cut a sleep short (stop, lease lost). A lost lease does not abort the long poll in
   * flight: its batch is still offered to the fenced commit, which decides (a new owner's own
   * getUpdates terminates that poll anyway, with a 409).
   */
  let wake = new AbortController();
  let resolveDone!: (e: PollerExit) => void;
  const done = new Promise<PollerExit>((r) => (resolveDone = r));
  let loopPromise: Promise<void> | null = null;
  let exit: PollerExit = { reason: 'stopped' };

  const interrupt = () => {
    wake.abort();
    wake = new AbortController();
  };

  // ---- watchdog -------------------------------------------------------------------------------
  // Progress = a committed batch, a recorded empty long poll, or a fresh lease; a batch transaction
  // that failed with an error restarts the window too (the database is down: a restart would not
  // help, readiness says so). The watchdog trips
  // when the owning generation made none for watchdogMs while Telegram is known to hold updates
  // (a non-empty getUpdates answer not yet committed). It ends the poller with `stalled` at once,
  // without waiting for the loop (which may be stuck on an await that never settles, e.g. a
  // frozen database connection): the process exits non-zero and its supervisor restarts it, and
  // meanwhile a hot standby takes over (the lease is released if the database answers, else it
  // expires within LEASE_TTL). An in-process "drop the lease and re-acquire" cannot unwind a hung
  // await, so it would not recover the cases this exists for.
  const now = opts.now ?? Date.now;
  const watchdogMs = opts.watchdogMs === false ? null : (opts.watchdogMs ?? 2 * opts.pollTimeoutMs);
  let lastProgressAt = now();
  let updatesWaitingSince: number | null = null;
  let watchdog: NodeJS.Timeout | null = null;
  const watchdogTickMs = watchdogMs === null ? 0 : Math.max(50, Math.min(1_000, Math.floor(watchdogMs / 4)));
  let lastTickAt = now();
  const progressed = () => {
    lastProgressAt = now();
    updatesWaitingSince = null;
  };
  // A batch transaction that failed with an error came back: the loop is alive and backing off
  // (the database is down or restarting), which a new process would not fix and readiness already
  // reports. It restarts the window; only an await that never settles trips the watchdog.
  const settledWithError = () => {
    lastProgressAt = now();
  };
  const checkWatchdog = () => {
    const tickAt = now();
    const gap = tickAt - lastTickAt;
    lastTickAt = tickAt;
    // A late tick means this process was suspended (SIGSTOP, VM pause) or its event loop blocked:
    // not a stall of its own. Give the loop a full window from now (a hung await does not delay ticks).
    if (gap > 3 * watchdogTickMs + 1_000) {
      lastProgressAt = Math.max(lastProgressAt, tickAt);
      return;
    }
    if (watchdogMs === null || stopping || state !== 'polling' || updatesWaitingSince === null) return;
    const idleMs = now() - lastProgressAt;
    if (idleMs < watchdogMs) return;
    const message = `poller watchdog: generation ${lease.fence()?.generation ?? '?'} made no progress for ${idleMs} ms (limit ${watchdogMs} ms = 2 × POLL_TIMEOUT) while Telegram holds updates; exiting so the supervisor restarts it`;
    logger.fatal({ idleMs, watchdogMs, offset, updatesWaitingMs: now() - updatesWaitingSince }, message);
    exit = { reason: 'stalled', message };
    stopping = true;
    stopCtl.abort();
    interrupt();
    stopWatchdog();
    void Promise.race([
      lease.release().catch(() => undefined),
      new Promise((r) => setTimeout(r, WATCHDOG_RELEASE_TIMEOUT_MS).unref()),
    ]).then(() => resolveDone(exit));
  };
  const stopWatchdog = () => {
    if (watchdog) clearInterval(watchdog);
    watchdog = null;
  };

  const lease: Lease = createLease({
    pool: opts.pool,
    botId: opts.botId,
    owner: opts.owner,
    ttlMs: opts.leaseTtlMs,
    logger,
    onLost: () => {
      haltedReason = null;
      interrupt();
    },
  });

  const fail = (kind: string, level: 'warn' | 'error', fields: Record<string, unknown>, message: string): number =>
    episodes.fail(kind, level, fields, message);

  async function acquire(): Promise<void> {
    state = 'standby';
    let got: { generation: number; nextOffset: number } | null;
    try {
      got = await lease.tryAcquire();
      episodes.recover('lease-db', 'database reachable again');
    } catch (err) {
      const n = fail('lease-db', 'error', { err }, 'cannot reach the database to acquire the lease; retrying');
      await sleep(backoffDelay(n, policy, random), wake.signal);
      return;
    }
    if (!got) {
      const delay = await lease.standbyDelayMs().catch(() => opts.leaseTtlMs / 2);
      await sleep(delay, wake.signal);
      return;
    }
    offset = got.nextOffset;
    haltedReason = null;
    progressed();
    logger.info({ generation: got.generation, offset }, 'ingress lease acquired: polling');
    if (opts.deleteWebhookOnAcquire !== false) await removeStaleWebhook();
  }

  async function removeStaleWebhook(): Promise<void> {
    try {
      const info = await opts.api.getWebhookInfo({ timeoutMs: 10_000 });
      tokenAccepted = true;
      if (info.url) {
        logger.warn('a webhook is registered for this bot but INGRESS=polling: deleting it (pending updates are kept)');
        await opts.api.deleteWebhook({ drop_pending_updates: false }, { timeoutMs: 10_000 });
      }
    } catch (err) {
      if (err instanceof TelegramApiError && err.errorCode === 401 && !tokenAccepted) throw err;
      logger.warn({ err }, 'could not check for a registered webhook; continuing');
    }
  }

  /** Says in relay.cursor why getUpdates fails (readiness shows it); once per episode, best effort. */
  async function recordPollError(fence: Fence | null, kind: PollErrorKind, error: string): Promise<void> {
    if (!fence) return;
    try {
      // a peer's description is peer content: bounded, and storable in a text column
      await cursorRecordPollError(opts.pool, opts.botId, fence, kind, storableText(error).slice(0, 500));
    } catch {
      // the database being away is reported by the lease and persist paths
    }
  }

  async function handleTelegramError(err: unknown, fence: Fence | null): Promise<void> {
    if (err instanceof TelegramNetworkError && err.reason === 'aborted') return; // stop()
    if (metrics) counted(getUpdatesFailure(err));
    if (err instanceof TelegramApiError) {
      // A token that never worked in this process is a typo: say so and stop (exit 78). Once it
      // worked, a 401 (revoked? a proxy?) is retried like the rest and shown in readiness.
      if (err.errorCode === 401 && !tokenAccepted) throw err;
      if (CONFIGURATION_STATUSES.has(err.errorCode)) {
        const what =
          err.errorCode === 401
            ? 'the bot token was rejected: check TELEGRAM_BOT_TOKEN'
            : 'check TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT';
        const reason = `getUpdates answered ${err.errorCode} (${err.description}): ${what}; retrying with backoff`;
        const n = fail('telegram-config', 'error', { errorCode: err.errorCode, description: err.description }, reason);
        if (n === 0) await recordPollError(fence, 'configuration', reason);
        await sleep(backoffDelay(n, policy, random), wake.signal);
        return;
      }
      if (err.errorCode === 409) {
        const n = fail(
          'conflict',
          'warn',
          { description: err.description },
          "getUpdates conflict: another poller or a webhook is taking this bot's updates; backing off and re-checking the lease",
        );
        if (!(await lease.renewNow())) return;
        await sleep(backoffDelay(n, policy, random), wake.signal);
        return;
      }
      if (err.errorCode === 429) {
        const waitMs = Math.max(1, err.retryAfter ?? 1) * 1000;
        fail('rate-limit', 'warn', { retryAfterS: err.retryAfter }, 'getUpdates rate limited: waiting retry_after');
        await sleep(waitMs, wake.signal);
        return;
      }
      const n = fail(
        'telegram',
        err.errorCode >= 500 ? 'warn' : 'error',
        { errorCode: err.errorCode, description: err.description },
        'getUpdates failed; retrying the same offset',
      );
      if (n === 0)
        await recordPollError(
          fence,
          'transport',
          `getUpdates answered ${err.errorCode} (${err.description}); retrying with backoff`,
        );
      await sleep(backoffDelay(n, policy, random), wake.signal);
      return;
    }
    const n = fail('telegram', 'warn', { err }, 'getUpdates failed; retrying the same offset');
    if (n === 0)
      await recordPollError(
        fence,
        'transport',
        `getUpdates failed (${err instanceof TelegramNetworkError ? err.reason : 'error'}: ${(err as Error)?.message ?? String(err)}); retrying with backoff`,
      );
    await sleep(backoffDelay(n, policy, random), wake.signal);
  }

  /** A 2xx answer that is not a Bot API answer (HTML from a proxy, a truncated body): a transport glitch. */
  async function handleGlitch(reason: string, bytes: number, fence: Fence): Promise<void> {
    const message = `getUpdates answer is not a Bot API answer (${reason}); retrying the same offset with backoff`;
    const n = fail('glitch', 'warn', { reason, bytes }, message);
    if (n === 0) await recordPollError(fence, 'transport', message);
    await sleep(backoffDelay(n, policy, random), wake.signal);
  }

  function endTelegramEpisodes(): void {
    episodes.recover('telegram', 'getUpdates works again');
    episodes.recover('telegram-config', 'getUpdates accepted again (configuration fixed)');
    episodes.recover('glitch', 'getUpdates answers are Bot API answers again');
    episodes.recover('conflict', 'getUpdates conflict over: this poller receives updates again');
    episodes.recover('rate-limit', 'getUpdates no longer rate limited');
  }

  /**
   * Runs the batch transaction under the generation that fetched the batch (even if the lease was
   * lost locally meanwhile: the database fence decides). False when it did not commit (then the
   * same offset is polled again).
   */
  async function commit(plan: BatchPlan, fence: Fence, requested: number): Promise<boolean> {
    try {
      const r = await measuredPersist(metrics, 'polling', () =>
        persistBatch({ pool: opts.pool, boss: opts.boss }, plan, {
          botId: opts.botId,
          fence,
          leaseTtlMs: opts.leaseTtlMs,
          allowedChatIds: allowed,
          dispatchUnauthorized: opts.dispatchUnauthorized ?? false,
          halt: null,
        }),
      );
      episodes.recover('persist', 'batch persisted again');
      progressed();
      batches++;
      updatesStored += r.stored;
      if (plan.nextOffset !== null && plan.nextOffset < requested)
        logger.warn(
          { requested, offset: plan.nextOffset, generation: fence.generation },
          'getUpdates served update_ids below the offset (Telegram reset its update ids): the cursor follows them',
        );
      if (plan.nextOffset !== null) offset = plan.nextOffset;
      logger.debug({ generation: fence.generation, offset, ...r }, 'batch committed');
      if (r.quarantined > 0)
        logger.warn(
          { quarantined: r.quarantined, generation: fence.generation },
          'undecodable updates quarantined (DECODE_POLICY=quarantine)',
        );
      if (r.captureConflicts.length > 0) logCaptureConflicts(logger, r, fence.generation);
      if (r.reused > 0) logReusedIds(logger, r, fence.generation);
      if (plan.halt) {
        haltedReason = plan.halt;
        logger.error(
          { reason: plan.halt, offset },
          'ingress halted by DECODE_POLICY=stop; fix or set DECODE_POLICY=quarantine, then restart the poller',
        );
      }
      return true;
    } catch (err) {
      if (err instanceof LeaseLostError) {
        logger.warn(
          { err, generation: fence.generation },
          'batch rejected by the lease fence (another replica owns ingress now); nothing was committed',
        );
        lease.markLost('fenced write rejected');
        return false;
      }
      settledWithError();
      const n = fail(
        'persist',
        'error',
        { err, offset },
        'batch transaction failed; nothing committed, the same offset will be polled again',
      );
      await sleep(backoffDelay(n, policy, random), wake.signal);
      settledWithError();
      return false;
    }
  }

  async function pollOnce(): Promise<void> {
    const fence = lease.fence();
    if (!fence || offset === null) return;
    state = haltedReason ? 'halted' : 'polling';
    if (haltedReason) {
      // Halted: keep the lease (so no standby replays the same failure) and wait for stop.
      await sleep(opts.leaseTtlMs, wake.signal);
      return;
    }
    const requested = offset;
    let body: string;
    let status: number;
    const callStart = new Date();
    const sentAt = performance.now(); // elapsed time from the monotonic clock: a wall-clock step must not look like a held poll
    try {
      const answer = await opts.api.callApiRaw(
        'getUpdates',
        { offset: requested, limit: GET_UPDATES_LIMIT, timeout: longPollSeconds },
        { signal: stopCtl.signal, timeoutMs: longPollSeconds * 1000 + LONG_POLL_GRACE_MS },
      );
      body = answer.body;
      status = answer.status;
    } catch (err) {
      await handleTelegramError(err, fence);
      return;
    }
    const scanned = scanUpdatesAnswer(body);
    if (metrics && scanned.kind !== 'not_ok')
      counted(scanned.kind === 'undecodable' ? 'not_bot_api' : scanned.items.length ? 'updates' : 'empty');
    if (scanned.kind === 'undecodable') {
      // Never the decode policy: no update was read, nothing is confirmed, the offset stays.
      await handleGlitch(scanned.reason, body.length, fence);
      return;
    }
    if (scanned.kind === 'updates') {
      tokenAccepted = true;
      endTelegramEpisodes();
    }
    if (scanned.kind === 'not_ok') {
      let env: unknown;
      try {
        env = JSON.parse(scanned.body);
      } catch {
        env = {};
      }
      // the envelope's fields are the server's: read as unknown and narrowed
      const e: { error_code?: unknown; description?: unknown; parameters?: unknown } =
        typeof env === 'object' && env !== null ? env : {};
      const d = e.description ?? 'ok is not true';
      const parameters =
        typeof e.parameters === 'object' && e.parameters !== null ? (e.parameters as ResponseParameters) : undefined;
      await handleTelegramError(
        new TelegramApiError('getUpdates', {
          errorCode: Number(e.error_code) || 500,
          // a description that is not a JSON primitive (never Telegram's) is not stringified: '[object Object]' says nothing
          description:
            typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean' ? String(d) : 'ok is not true',
          parameters,
        }),
        fence,
      );
      return;
    }
    const plan = planBatch(scanned.items, { policy: opts.decodePolicy, offset: requested, transport: 'polling' });
    if (scanned.items.length > 0) updatesWaitingSince ??= now();
    if (plan.updates.length === 0 && plan.quarantine.length === 0 && !plan.halt) {
      // An empty long poll: progress for this generation (fenced; also extends the lease).
      try {
        if (!(await cursorRecordProgress(opts.pool, opts.botId, fence, opts.leaseTtlMs))) {
          lease.markLost('fenced progress write rejected');
          return;
        }
        episodes.recover('persist', 'database reachable again');
        progressed();
      } catch (err) {
        const n = fail('persist', 'error', { err }, 'could not record progress');
        await sleep(backoffDelay(n, policy, random), wake.signal);
        return;
      }
      if (longPollSeconds === 0) {
        await sleep(opts.pollTimeoutMs, wake.signal);
      } else {
        // Telegram holds an empty long poll open for `timeout` seconds; a peer answering at once (a
        // proxy, a broken self-hosted Bot API) would otherwise be polled, and progress written, in
        // a tight loop
        const heldMs = performance.now() - sentAt;
        if (heldMs < EARLY_EMPTY_POLL_MS) {
          fail(
            'early-empty',
            'warn',
            { timeoutS: longPollSeconds, answeredInMs: Math.round(heldMs) },
            'getUpdates answered an empty long poll at once (the Bot API does not hold it open): polling at most once a second',
          );
          await sleep(EMPTY_POLL_MIN_MS - heldMs, wake.signal);
        } else {
          episodes.recover('early-empty', 'getUpdates holds empty long polls open again');
        }
      }
      return;
    }
    const call = { start: callStart, end: new Date(), status, offset: requested };
    await traceIngressBatch({ operation: 'getUpdates', botId: opts.botId, count: scanned.items.length, call }, () =>
      commit(plan, fence, requested),
    );
  }

  async function loop(): Promise<void> {
    try {
      while (!stopping) {
        if (!lease.fence()) await acquire();
        else await pollOnce();
      }
    } catch (err) {
      if (err instanceof TelegramApiError && err.errorCode === 401) {
        const message =
          'Telegram rejected the bot token (401 Unauthorized): check TELEGRAM_BOT_TOKEN; the poller stopped';
        logger.fatal({ description: err.description }, message);
        exit = { reason: 'unauthorized', message };
      } else {
        throw err;
      }
    } finally {
      state = 'stopped';
      stopWatchdog();
      await lease.release();
    }
  }

  metrics?.track(opts.botId, () => lease.fence() !== null);

  return {
    start() {
      if (started || stopping) return;
      started = true;
      if (watchdogMs !== null) {
        lastTickAt = now();
        watchdog = setInterval(checkWatchdog, watchdogTickMs);
        watchdog.unref();
      }
      loopPromise = loop().then(
        () => resolveDone(exit),
        (err) => {
          logger.fatal({ err }, 'poller loop crashed');
          resolveDone({ reason: 'crashed', message: `poller loop crashed: ${(err as Error)?.message ?? String(err)}` });
        },
      );
    },
    async stop() {
      stopping = true;
      stopCtl.abort();
      interrupt();
      if (!started) {
        started = true;
        await lease.release();
        resolveDone(exit);
        return;
      }
      await loopPromise;
    },
    done,
    status: () => ({
      state,
      generation: lease.fence()?.generation ?? null,
      offset,
      haltedReason,
      batches,
      updates: updatesStored,
    }),
  };
}

/** The getUpdates result label of a failed call (METRICS_PORT). */
function getUpdatesFailure(err: unknown): GetUpdatesResult {
  if (err instanceof TelegramApiError)
    return err.errorCode === 409 ? 'conflict' : err.errorCode === 429 ? 'rate_limited' : 'api_error';
  return 'network_error';
}
