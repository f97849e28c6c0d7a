/**
 * The collector sandbox: the HTTP endpoint captures are delivered to. `POST /capture` (JSON body)
 * is recorded by its `Idempotency-Key` header (400 without one); the same key received again is
 * counted as a duplicate (and still answered 200, as an idempotent endpoint would). Failure modes
 * are injected per call (see collector-faults.ts). Control API under `/sandbox/…`:
 *
 *   GET  /sandbox/health | /sandbox/received | /sandbox/keys | /sandbox/duplicates | /sandbox/attempts | /sandbox/stats
 *   POST /sandbox/faults {faults: CollectorFaults|null}
 *   POST /sandbox/reset
 *   POST /sandbox/crash   closes the server as if it had died
 */
import http from 'node:http';
import type { Logger } from '../observability/logger';
import { silentLogger } from '../observability/logger';
import {
  type CollectorFaultMode,
  type CollectorFaults,
  decideCollectorFault,
  validateCollectorFaults,
} from './collector-faults';
import { readBody, readControlParams, sendJson } from './http-io';
import { PeerServer } from './peer-server';
import { createRng } from './rng';
import { errorMessage } from '../errors';

export interface CollectorReceipt {
  seq: number;
  key: string;
  body: unknown;
  /** ms since epoch. */
  received_at: number;
  /** This key had been received before. */
  duplicate: boolean;
  /** 1 for the first receipt of the key, 2 for the second, … */
  nth: number;
}

export type CollectorOutcome = 'accepted' | 'duplicate' | 'missing_key' | 'bad_json' | CollectorFaultMode;

export interface CollectorAttempt {
  seq: number;
  key: string | null;
  time: number;
  outcome: CollectorOutcome;
  /** HTTP status answered (0: dropped, or held without answer). */
  status: number;
}

export interface CollectorStats {
  attempts: number;
  received: number;
  unique_keys: number;
  duplicate_receipts: number;
  by_outcome: Record<string, number>;
}

export interface CollectorOptions {
  host?: string;
  port?: number;
  seed?: number;
  faults?: CollectorFaults;
  logger?: Logger;
  /** Called for every recorded capture (benchmarks measure latency). */
  onReceive?: (receipt: CollectorReceipt) => void;
}

export interface Collector {
  readonly url: string;
  /** url + '/capture' (CAPTURE_URL). */
  readonly captureUrl: string;
  start(): Promise<string>;
  stop(): Promise<void>;
  /** Resolves with why once the server stops without stop(): `tg-relay start` exits on it. */
  readonly died: Promise<string>;
  /** Closes the server as if it had died (POST /sandbox/crash). */
  crash(): void;
  received(): CollectorReceipt[];
  byKey(): Map<string, CollectorReceipt[]>;
  duplicates(): Array<{ key: string; count: number }>;
  attempts(): CollectorAttempt[];
  stats(): CollectorStats;
  setFaults(faults: CollectorFaults | null): void;
  reset(): void;
}

class CollectorServer implements Collector {
  private readonly server = new PeerServer('sandbox collector', (req, res) => {
    this.route(req, res).catch((err: unknown) => {
      this.logger.error({ err }, 'collector request failed');
      if (!res.headersSent && !res.destroyed)
        sendJson(res, 500, { ok: false, error_code: 500, description: 'Internal Server Error' });
    });
  });
  private receipts: CollectorReceipt[] = [];
  private keys = new Map<string, CollectorReceipt[]>();
  private attemptLog: CollectorAttempt[] = [];
  private faults: CollectorFaults | null;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly rng;
  private readonly logger: Logger;

  constructor(private readonly opts: CollectorOptions) {
    this.rng = createRng(opts.seed);
    this.faults = opts.faults ? validateCollectorFaults(opts.faults) : null;
    this.logger = (opts.logger ?? silentLogger()).child({ component: 'sandbox-collector' });
  }

  get url(): string {
    return this.server.url;
  }

  get died(): Promise<string> {
    return this.server.died;
  }

  get captureUrl(): string {
    return `${this.url}/capture`;
  }

  start(): Promise<string> {
    return this.server.start(this.opts.host ?? '127.0.0.1', this.opts.port ?? 0);
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.server.close();
  }

  crash(): void {
    this.server.crash();
  }

  received(): CollectorReceipt[] {
    return this.receipts.slice();
  }

  byKey(): Map<string, CollectorReceipt[]> {
    return new Map([...this.keys].map(([k, v]) => [k, v.slice()]));
  }

  duplicates(): Array<{ key: string; count: number }> {
    const out: Array<{ key: string; count: number }> = [];
    for (const [key, list] of this.keys) if (list.length > 1) out.push({ key, count: list.length });
    return out;
  }

  attempts(): CollectorAttempt[] {
    return this.attemptLog.slice();
  }

  stats(): CollectorStats {
    const by: Record<string, number> = {};
    for (const a of this.attemptLog) by[a.outcome] = (by[a.outcome] ?? 0) + 1;
    return {
      attempts: this.attemptLog.length,
      received: this.receipts.length,
      unique_keys: this.keys.size,
      duplicate_receipts: this.receipts.length - this.keys.size,
      by_outcome: by,
    };
  }

  setFaults(faults: CollectorFaults | null): void {
    this.faults = faults ? validateCollectorFaults(faults) : null;
  }

  reset(): void {
    this.receipts = [];
    this.keys.clear();
    this.attemptLog = [];
    this.faults = null;
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://collector');
    if (url.pathname === '/capture' && req.method === 'POST') return this.capture(req, res);
    if (url.pathname.startsWith('/sandbox/')) return this.control(req, res, url);
    sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
  }

  private attempt(key: string | null, outcome: CollectorOutcome, status: number): void {
    this.attemptLog.push({ seq: this.attemptLog.length + 1, key, time: Date.now(), outcome, status });
  }

  private async capture(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readBody(req);
    const header = req.headers['idempotency-key'];
    const key = (Array.isArray(header) ? header[0] : header)?.trim() || null;
    if (!key) {
      this.attempt(null, 'missing_key', 400);
      sendJson(res, 400, { ok: false, error_code: 400, description: 'Idempotency-Key header is required' });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      this.attempt(key, 'bad_json', 400);
      sendJson(res, 400, { ok: false, error_code: 400, description: 'body must be JSON' });
      return;
    }
    const f = this.faults;
    if (f?.latencyMs) await new Promise((r) => this.later(f.latencyMs as number, () => r(undefined)));
    const mode = decideCollectorFault(f, this.rng);
    switch (mode) {
      case 'drop':
        this.attempt(key, 'drop', 0);
        res.destroy();
        req.socket.destroy();
        return;
      case 'unavailable': {
        this.attempt(key, 'unavailable', 503);
        const headers: Record<string, string> = {};
        if (f?.retryAfterSeconds !== undefined) headers['Retry-After'] = String(f.retryAfterSeconds);
        sendJson(res, 503, { ok: false, error_code: 503, description: 'Service Unavailable' }, headers);
        return;
      }
      case 'timeout':
        this.attempt(key, 'timeout', 0);
        if (f?.timeoutMs)
          this.later(
            f.timeoutMs,
            () => !res.destroyed && sendJson(res, 504, { ok: false, error_code: 504, description: 'Gateway Timeout' }),
          );
        return; // otherwise held until the client gives up or the collector stops
      case 'reject': {
        const status = f?.rejectStatus ?? 422;
        this.attempt(key, 'reject', status);
        sendJson(res, status, {
          ok: false,
          error_code: status,
          description: http.STATUS_CODES[status] ?? 'Client Error',
        });
        return;
      }
      default: {
        const receipt = this.record(key, parsed);
        this.attempt(key, mode === 'slow' ? 'slow' : receipt.duplicate ? 'duplicate' : 'accepted', 200);
        const answer = (): void => {
          if (!res.destroyed) sendJson(res, 200, { ok: true, duplicate: receipt.duplicate });
        };
        if (mode === 'slow') this.later(f?.slowMs ?? 5000, answer);
        else answer();
      }
    }
  }

  private record(key: string, body: unknown): CollectorReceipt {
    const list = this.keys.get(key) ?? [];
    const receipt: CollectorReceipt = {
      seq: this.receipts.length + 1,
      key,
      body,
      received_at: Date.now(),
      duplicate: list.length > 0,
      nth: list.length + 1,
    };
    list.push(receipt);
    this.keys.set(key, list);
    this.receipts.push(receipt);
    this.opts.onReceive?.(receipt);
    return receipt;
  }

  private async control(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    const route = `${req.method === 'HEAD' ? 'GET' : req.method} ${url.pathname}`;
    let result: unknown;
    try {
      const p = await readControlParams(req, url);
      switch (route) {
        case 'GET /sandbox/health':
          result = { status: 'ok' };
          break;
        case 'GET /sandbox/received':
          result = this.received();
          break;
        case 'GET /sandbox/keys':
          result = Object.fromEntries(this.keys);
          break;
        case 'GET /sandbox/duplicates':
          result = this.duplicates();
          break;
        case 'GET /sandbox/attempts':
          result = this.attempts();
          break;
        case 'GET /sandbox/stats':
          result = this.stats();
          break;
        case 'POST /sandbox/faults':
          if (p.faults === undefined) throw new Error('"faults" is required (object or null)');
          this.setFaults(p.faults);
          result = true;
          break;
        case 'POST /sandbox/reset':
          this.reset();
          result = true;
          break;
        case 'POST /sandbox/crash': // once the answer is out: closing first would cut it off
          res.once('finish', () => this.crash());
          result = true;
          break;
        default:
          sendJson(res, 404, { ok: false, error_code: 404, description: `Not Found: no collector route ${route}` });
          return;
      }
    } catch (err) {
      sendJson(res, 400, {
        ok: false,
        error_code: 400,
        description: `Bad Request: ${errorMessage(err) ?? String(err)}`,
      });
      return;
    }
    sendJson(res, 200, { ok: true, result });
  }
}

export function createCollector(opts: CollectorOptions = {}): Collector {
  return new CollectorServer(opts);
}
