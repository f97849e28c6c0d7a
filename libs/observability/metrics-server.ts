/**
 * The METRICS_PORT endpoint of a process (node:http, no framework): `/metrics` (Prometheus text
 * from the process registry), `/health/live` (the process answers) and `/health/ready` (every
 * component that registered a check is ready; 503 with the reasons otherwise). It starts before
 * the components, so liveness answers during startup while readiness says "starting".
 */
import { errorMessage } from '../errors';
import { withTimeout } from '../lifecycle/timers';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Queryable } from '../db/pool';

export interface ReadyCheck {
  ready: boolean;
  reasons: string[];
  [detail: string]: unknown;
}

export interface MetricsServer {
  readonly port: number;
  /** `http://host:port` */
  readonly address: string;
  /** A component's readiness; `/health/ready` is 200 only when every check is ready. */
  addCheck(component: string, check: () => Promise<ReadyCheck>): void;
  /** Idempotent. */
  close(): Promise<void>;
}

/** How long one readiness check may take before it counts as not ready. */
export const READY_CHECK_TIMEOUT_MS = 2_000;

/** null when the database answers `select 1` in time, else why not. */
export async function databaseProblem(db: Queryable, timeoutMs = READY_CHECK_TIMEOUT_MS): Promise<string | null> {
  try {
    await withTimeout(db.query('select 1'), timeoutMs, 'the database');
    return null;
  } catch (err) {
    return `database: ${errorMessage(err) || String(err)}`;
  }
}

export async function startMetricsServer(opts: {
  host: string;
  port: number;
  registry: Registry;
}): Promise<MetricsServer> {
  const checks = new Map<string, () => Promise<ReadyCheck>>();
  const readiness = async (): Promise<{ ready: boolean; reasons: string[]; checks: Record<string, ReadyCheck> }> => {
    if (checks.size === 0) return { ready: false, reasons: ['starting'], checks: {} };
    const out: Record<string, ReadyCheck> = {};
    await Promise.all(
      [...checks].map(async ([name, check]) => {
        out[name] = await withTimeout(check(), READY_CHECK_TIMEOUT_MS + 500, `the ${name} check`).catch(
          (err: Error) => ({
            ready: false,
            reasons: [err.message],
          }),
        );
      }),
    );
    const reasons = Object.entries(out).flatMap(([name, c]) => c.reasons.map((r) => `${name}: ${r}`));
    return { ready: Object.values(out).every((c) => c.ready), reasons, checks: out };
  };

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const json = (status: number, body: unknown) =>
      send(status, 'application/json; charset=utf-8', JSON.stringify(body));
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(405, { code: 'METHOD_NOT_ALLOWED', message: 'GET only' });
    if (path === '/health/live') return json(200, { live: true });
    if (path === '/health/ready') {
      readiness().then(
        (r) => json(r.ready ? 200 : 503, r),
        (err: Error) => json(503, { ready: false, reasons: [err.message], checks: {} }),
      );
      return;
    }
    if (path === '/metrics') {
      opts.registry.metrics().then(
        (text) => send(200, opts.registry.contentType, text),
        (err: Error) => json(500, { code: 'METRICS_FAILED', message: err.message }),
      );
      return;
    }
    json(404, { code: 'NOT_FOUND', message: 'try /metrics, /health/live or /health/ready' });
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? Object.assign(
              new Error(`METRICS_PORT ${opts.port} on ${opts.host} is already in use: choose another port`),
              { code: 'EADDRINUSE' },
            )
          : err,
      );
    server.once('error', failed);
    server.listen(opts.port, opts.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    port,
    address: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`,
    addCheck: (component, check) => void checks.set(component, check),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
