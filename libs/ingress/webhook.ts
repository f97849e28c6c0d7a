/**
 * Webhook transport: `POST /telegram/webhook/:botId`, as a Fastify plugin. The last path segment
 * is the bot id of a single-bot webhook, or a fleet bot's derived path key (webhook-keys.ts); a
 * segment no route is known for is answered 404.
 *
 * - `X-Telegram-Bot-Api-Secret-Token` is compared in constant time (hashes of equal length) → 401.
 * - The body is read as text (size-limited) so quarantine keeps its exact bytes.
 * - 200 only after the batch transaction (the same `persistBatch` as polling) committed; 5xx
 *   otherwise, so Telegram redelivers; a redelivery of a committed update is absorbed by the inbox
 *   key. 503 + `Retry-After: 1` while this replica does not hold the lease.
 * - Concurrent deliveries share a batch transaction (group commit, see `drain`): the cursor row
 *   lock would otherwise make them commit one at a time.
 * - A body that is not a Telegram update at all (not JSON, not an object, no integer `update_id`)
 *   is answered 400 and recorded in relay.quarantine (transport `webhook`, error starting with
 *   `webhook body rejected`), whatever DECODE_POLICY says: it never halts anything.
 * - The 200 body never contains `method` (Telegram would execute it as a webhook reply).
 */
import { errorCode } from '../errors';
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { decodeUpdate } from './decode';
import { LeaseLostError } from './errors';
import { traceIngressBatch } from './batch-span';
import { logCaptureConflicts, logReusedIds, persistBatch } from './persist-batch';
import { timedPersist } from './batch-timing';
import { createIngressEvents, type IngressEvents } from './events';
import { BatchPlan, DecodePolicy, planDecoded, sha256Hex } from './plan-batch';
import { Fence, quarantineInsertBatch } from './queries';

export const WEBHOOK_PATH_PREFIX = '/telegram/webhook';
/** Telegram updates are a few KiB; 1 MiB leaves room without inviting abuse. */
export const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

export function webhookPath(botId: string): string {
  return `${WEBHOOK_PATH_PREFIX}/${botId}`;
}

export interface WebhookAnswer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export interface WebhookHandlerOptions {
  pool: Pool;
  boss: JobLedger;
  botId: string;
  /** The current fence, or null while standing by. */
  fence: () => Fence | null;
  leaseTtlMs: number;
  decodePolicy: DecodePolicy;
  allowedChatIds: readonly string[];
  dispatchUnauthorized?: boolean;
  logger: Logger;
  /** Called when a fenced write was rejected (the lease is gone). */
  onLeaseLost?: () => void;
  /** Told how each batch transaction ended (default: the handler's own, unobserved). */
  events?: IngressEvents;
}

/** Decodes one webhook body and runs the batch transaction; returns the HTTP answer. */
export function createWebhookHandler(opts: WebhookHandlerOptions): (raw: string) => Promise<WebhookAnswer> {
  const allowed = new Set(opts.allowedChatIds.map(String));
  const events = opts.events ?? createIngressEvents(opts.logger);
  /** Not an update: 400, recorded (idempotent by sha256, so Telegram's retries add no rows). */
  async function reject(fence: Fence, raw: string, error: string, jsonPath: string): Promise<WebhookAnswer> {
    try {
      const n = await quarantineInsertBatch(
        opts.pool,
        opts.botId,
        fence,
        [{ updateId: null, raw, sha256: sha256Hex(raw), error: `webhook body rejected (400): ${error}`, jsonPath }],
        'webhook',
      );
      if (n > 0)
        opts.logger.warn(
          { error, jsonPath, bytes: Buffer.byteLength(raw) },
          'webhook body is not a Telegram update: answered 400 and recorded in relay.quarantine',
        );
    } catch (err) {
      opts.logger.error({ err }, 'could not record a rejected webhook body; answered 500 so it is retried');
      return { status: 500, body: { ok: false, error: 'persist failed' } };
    }
    return { status: 400, body: { ok: false, error: 'not a Telegram update', reason: error } };
  }
  /** The batch transaction of `plan` (one delivery or a group), traced and measured; its capture conflicts logged. */
  async function persist(plan: BatchPlan, fence: Fence) {
    const r = await traceIngressBatch({ operation: 'webhook', botId: opts.botId, count: plan.updates.length }, () =>
      timedPersist(events, 'webhook', () =>
        persistBatch({ pool: opts.pool, boss: opts.boss }, plan, {
          botId: opts.botId,
          fence,
          leaseTtlMs: opts.leaseTtlMs,
          allowedChatIds: allowed,
          dispatchUnauthorized: opts.dispatchUnauthorized ?? false,
          // a commit ends a DECODE_POLICY=stop halt once the refused update is stored (see batchStatement)
          halt: null,
        }),
      ),
    );
    if (r.captureConflicts.length > 0) logCaptureConflicts(opts.logger, r, fence.generation);
    if (r.reused > 0) logReusedIds(opts.logger, r, fence.generation);
    return r;
  }
  /** One delivery in its own batch transaction (as before coalescing; also the fallback). */
  async function persistAlone(plan: BatchPlan, fence: Fence): Promise<WebhookAnswer> {
    try {
      const r = await persist(plan, fence);
      if (plan.halt) {
        opts.logger.error(
          { reason: plan.halt },
          'webhook update rejected by DECODE_POLICY=stop (its bytes are held in relay.quarantine; answered 500, Telegram will redeliver)',
        );
        return { status: 500, body: { ok: false, error: 'undecodable update (DECODE_POLICY=stop)' } };
      }
      if (r.quarantined > 0) opts.logger.warn({ quarantined: r.quarantined }, 'undecodable webhook update quarantined');
      return OK;
    } catch (err) {
      return failed(err);
    }
  }
  function failed(err: unknown): WebhookAnswer {
    if (err instanceof LeaseLostError) {
      opts.onLeaseLost?.();
      return LEASE_LOST;
    }
    const code = errorCode(err);
    opts.logger.error({ err }, 'webhook batch transaction failed; answered 500 so Telegram redelivers');
    return {
      status: 500,
      body: { ok: false, error: code && /^RELAY_/.test(code) ? code : 'persist failed' },
    };
  }

  /*
   * Group commit. Every delivery's transaction starts by locking the cursor row, so concurrent
   * deliveries (Telegram uses up to max_connections) would commit one after another. Instead,
   * deliveries that arrive while a batch transaction is in flight wait for it and are then written
   * together, up to MAX_GROUP per transaction, each answered 200 only after that commit. A group
   * that fails is retried one delivery per transaction, so a delivery whose write fails gets its
   * own 500 and the others their 200 (a capture key conflict is no failure: that update is kept in
   * relay.quarantine and answered 200 with the rest); a fenced group answers 503 to all. Only clean
   * deliveries are grouped (decoded, nothing to quarantine or halt on); two deliveries of one
   * update_id never share a transaction (the later one waits for the next), so each is judged
   * against the committed first exactly as before.
   */
  const waiting: Array<{ plan: BatchPlan; fence: Fence; answer: (a: WebhookAnswer) => void }> = [];
  let draining = false;
  async function drain(): Promise<void> {
    draining = true;
    try {
      while (waiting.length > 0) {
        const first = waiting[0];
        const ids = new Set<number>();
        const group: typeof waiting = [];
        for (let i = 0; i < waiting.length && group.length < MAX_GROUP;) {
          const w = waiting[i];
          const id = w.plan.updates[0].updateId;
          if (w.fence.owner === first.fence.owner && w.fence.generation === first.fence.generation && !ids.has(id)) {
            ids.add(id);
            group.push(w);
            waiting.splice(i, 1);
          } else i++;
        }
        if (group.length === 1) {
          group[0].answer(await persistAlone(group[0].plan, group[0].fence));
          continue;
        }
        const plan: BatchPlan = {
          updates: group.map((g) => g.plan.updates[0]),
          quarantine: [],
          nextOffset: Math.max(...group.map((g) => g.plan.nextOffset ?? 0)),
          halt: null,
          transport: 'webhook',
        };
        try {
          await persist(plan, first.fence);
          for (const g of group) g.answer(OK);
        } catch (err) {
          if (err instanceof LeaseLostError) {
            const a = failed(err);
            for (const g of group) g.answer(a);
            continue;
          }
          for (const g of group) g.answer(await persistAlone(g.plan, g.fence));
        }
      }
    } finally {
      draining = false;
    }
  }

  return async (raw) => {
    const fence = opts.fence();
    if (!fence)
      return { status: 503, body: { ok: false, error: 'not the ingress owner' }, headers: { 'retry-after': '1' } };
    const envelope = decodeUpdate(raw);
    if (!envelope.ok && envelope.failure.updateId === null)
      return reject(fence, raw, envelope.failure.error, envelope.failure.jsonPath);
    const plan = planDecoded([envelope], { policy: opts.decodePolicy, offset: 0, transport: 'webhook' });
    if (plan.halt || plan.quarantine.length > 0 || plan.updates.length !== 1) return persistAlone(plan, fence);
    return new Promise<WebhookAnswer>((answer) => {
      waiting.push({ plan, fence, answer });
      if (!draining) void drain();
    });
  };
}

/** Deliveries written in one transaction at most (a getUpdates batch is at most 100 too). */
const MAX_GROUP = 100;
const OK: WebhookAnswer = { status: 200, body: { ok: true } };
const LEASE_LOST: WebhookAnswer = {
  status: 503,
  body: { ok: false, error: 'lease lost' },
  headers: { 'retry-after': '1' },
};

/** Where one webhook path leads: the secret its deliveries must carry and the bot's handler. */
export interface WebhookRoute {
  secret: string;
  handle: (raw: string) => Promise<WebhookAnswer>;
}

/**
 * One bot (`botId` is the path key, checked against `secret`), or many: `route` answers the route of
 * a path key (a fleet's shared server, webhook-server.ts), undefined for a path it does not serve.
 */
export type WebhookPluginOptions = { bodyLimit?: number } & (
  ({ botId: string } & WebhookRoute) | { route: (key: string) => WebhookRoute | undefined }
);

const digest = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest();

/** Constant-time comparison of the secret header (hashing equalises lengths). */
export function secretMatches(provided: unknown, expected: string): boolean {
  if (typeof provided !== 'string') return false;
  return crypto.timingSafeEqual(digest(provided), digest(expected));
}

// A promise, as an async plugin's: a registration that throws rejects it (avvio does not catch a synchronous throw).
export const webhookPlugin: FastifyPluginAsync<WebhookPluginOptions> = (app: FastifyInstance, opts) =>
  new Promise((resolve) => resolve(registerWebhookRoute(app, opts)));

function registerWebhookRoute(app: FastifyInstance, opts: WebhookPluginOptions): void {
  const bodyLimit = opts.bodyLimit ?? WEBHOOK_BODY_LIMIT_BYTES;
  // Encapsulated: only routes of this plugin read JSON as text.
  if (app.hasContentTypeParser('application/json')) app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_req, body, done) =>
    done(null, body),
  );
  const route = 'route' in opts ? opts.route : (key: string) => (key === opts.botId ? opts : undefined);
  app.post<{ Params: { botId: string } }>(`${WEBHOOK_PATH_PREFIX}/:botId`, { bodyLimit }, async (req, reply) => {
    const target = route(req.params.botId);
    if (!target) return reply.code(404).send({ ok: false, error: 'unknown bot' });
    if (!secretMatches(req.headers['x-telegram-bot-api-secret-token'], target.secret)) {
      return reply.code(401).send({ ok: false, error: 'bad secret token' });
    }
    const raw =
      typeof req.body === 'string'
        ? req.body
        : req.body === undefined || req.body === null
          ? ''
          : JSON.stringify(req.body);
    const answer = await target.handle(raw);
    if (answer.headers) reply.headers(answer.headers);
    return reply.code(answer.status).send(answer.body);
  });
}
