/**
 * A TCP proxy to PostgreSQL that can freeze: while frozen, bytes are swallowed in both directions
 * and new connections are accepted but never forwarded — the client sees an open socket that never
 * answers (a frozen network path, a hung load balancer), with no error and no FIN. `thaw()` closes
 * every connection made so far and forwards again.
 */
import net from 'node:net';

export interface FreezableProxy {
  /** The database URL with host and port replaced by the proxy's. */
  url: string;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startFreezableProxy(databaseUrl: string): Promise<FreezableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  let frozen = false;
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
      if (!frozen) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!frozen) client.write(d);
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
