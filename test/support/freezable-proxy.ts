/**
 * A TCP proxy to PostgreSQL that can freeze: while frozen, bytes are swallowed in both directions
 * and new connections are accepted but never forwarded — the client sees an open socket that never
 * answers (a frozen network path, a hung load balancer), with no error and no FIN. `thaw()` closes
 * every connection made so far and forwards again. `blackholeExisting()` freezes only the connections
 * made so far, for good, and keeps forwarding new ones: a failover or a lost NAT entry, where the old
 * sockets stay open and silent while a new connection reaches the server.
 */
import net from 'node:net';

export interface FreezableProxy {
  /** The database URL with host and port replaced by the proxy's. */
  url: string;
  freeze(): void;
  thaw(): void;
  /** Connections open now never pass another byte (and are never closed); new ones work. */
  blackholeExisting(): void;
  stop(): Promise<void>;
}

export async function startFreezableProxy(databaseUrl: string): Promise<FreezableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  let frozen = false;
  const blackholed = new WeakSet<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
    if (frozen) return; // accepted, never forwarded
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => sockets.delete(upstream));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (d) => {
      if (!frozen && !blackholed.has(client)) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!frozen && !blackholed.has(client)) client.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const u = new URL(databaseUrl);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return {
    url: u.toString(),
    freeze: () => {
      frozen = true;
    },
    blackholeExisting: () => {
      for (const s of sockets) blackholed.add(s);
    },
    thaw: () => {
      frozen = false;
      for (const s of sockets) s.destroy();
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
