/** Helpers for the sandbox contract tests: raw Bot API calls over HTTP and a scriptable webhook receiver. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TgResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answer of any Bot API method (or a text body): each test reads its method's shape
  body: any;
}

/** One Bot API call as a client would make it: POST JSON to `${apiRoot}/bot<token>/<method>`. */
export async function tg(
  apiRoot: string,
  token: string,
  method: string,
  params?: Record<string, unknown>,
  init: RequestInit = {},
): Promise<TgResponse> {
  const res = await fetch(`${apiRoot}/bot${token}/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(params ?? {}),
    ...init,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // leave as text
  }
  return { status: res.status, headers: res.headers, body };
}

export interface ReceivedWebhook {
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever update the sandbox delivered: tests read the fields of the one they injected
  json: any;
  headers: http.IncomingHttpHeaders;
  at: number;
}

export type WebhookResponder = (
  hook: ReceivedWebhook,
  index: number,
) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'drop';

/** A webhook endpoint that records every delivery and answers what `responder` says (200 by default). */
export async function startWebhookReceiver(responder: WebhookResponder = () => ({ status: 200 })) {
  const received: ReceivedWebhook[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const hook = { body, json, headers: req.headers, at: Date.now() };
      received.push(hook);
      const answer = responder(hook, received.length - 1);
      if (answer === 'drop') {
        req.socket.destroy();
        return;
      }
      const send = () => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export function updateIds(body: unknown): number[] {
  return (body as { result: Array<{ update_id: number }> }).result.map((u) => u.update_id);
}
