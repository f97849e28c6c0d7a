import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The HTTP server of a sandbox peer (the Bot API sandbox, the collector): listens, closes, and
 * reports a server that stops without being asked (`died`), so `tg-relay start` can exit instead
 * of running on against a stand-in that no longer answers.
 */
export class PeerServer {
  private server: http.Server | null = null;
  private baseUrl = '';
  private resolveDied!: (why: string) => void;
  /** Resolves with why once the server stops without close(): an error, or crash(). */
  readonly died = new Promise<string>((r) => (this.resolveDied = r));

  constructor(
    private readonly what: string,
    private readonly listener: http.RequestListener,
    private readonly keepAliveTimeoutMs?: number,
  ) {}

  get url(): string {
    if (!this.baseUrl) throw new Error(`${this.what} not started`);
    return this.baseUrl;
  }

  get listening(): boolean {
    return this.server !== null;
  }

  async start(host: string, port: number): Promise<string> {
    if (this.server) return this.baseUrl;
    const server = http.createServer(this.listener);
    if (this.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = this.keepAliveTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    server.on('error', (err) => this.lost(server, `the ${this.what} server failed: ${err.message}`));
    server.on('close', () => this.lost(server, `the ${this.what} server closed`));
    const addr = server.address() as AddressInfo;
    const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    this.baseUrl = `http://${h}:${addr.port}`;
    return this.baseUrl;
  }

  /** Stops listening and drops open connections (an expected stop: `died` stays pending). */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    await closeNow(server);
  }

  /** Stops the server as if it had died: `died` resolves (rehearsing a supervisor's reaction). */
  crash(): void {
    const server = this.server;
    if (!server) return;
    this.lost(server, `the ${this.what} server was crashed on request`);
    void closeNow(server);
  }

  private lost(server: http.Server, why: string): void {
    if (this.server !== server) return; // closed on purpose, or already reported
    this.server = null;
    this.resolveDied(why);
  }
}

function closeNow(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
