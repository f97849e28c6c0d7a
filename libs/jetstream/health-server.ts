/**
 * The bridge's own small HTTP server (JETSTREAM_HEALTH_PORT): `/health/live` answers while the
 * process runs; `/health/ready` is 200 only while the bridge is connected, bound to its stream and
 * consumer, and its last batch committed (503 with the reasons otherwise).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BridgeHealth, BridgeStats } from './bridge';

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(opts: {
  host: string;
  port: number;
  health: () => BridgeHealth;
  stats: () => BridgeStats;
}): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') return send(405, { code: 'METHOD_NOT_ALLOWED', message: 'GET only' });
    if (path === '/health/live') return send(200, { live: true });
    if (path === '/health/ready') {
      const h = opts.health();
      return send(h.ready ? 200 : 503, { ...h, stats: opts.stats() });
    }
    send(404, { code: 'NOT_FOUND', message: 'try /health/live or /health/ready' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
