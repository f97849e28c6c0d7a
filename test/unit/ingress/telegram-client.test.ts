import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBotApiClient, TelegramApiError, TelegramNetworkError } from '../../../libs/telegram';

const TOKEN = '123456:AAH-secret_token_value_that_must_not_leak';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

async function serve(
  handler: Handler,
): Promise<{ url: string; close(): Promise<void>; seen: Array<{ url: string; body: string }> }> {
  const seen: Array<{ url: string; body: string }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

function expectNoToken(err: unknown) {
  const text = `${String(err)} ${JSON.stringify(err)} ${(err as Error).stack ?? ''} ${String((err as { cause?: Error }).cause ?? '')}`;
  expect(text).not.toContain('AAH-secret');
}

describe('Bot API client', () => {
  it('POSTs JSON to /bot<token>/<method> and returns `result`', async () => {
    const srv = await serve((_req, _body, res) =>
      json(res, 200, { ok: true, result: { id: 123456, is_bot: true, first_name: 'B' } }),
    );
    const api = createBotApiClient({ token: TOKEN, apiRoot: srv.url });
    try {
      await expect(api.getMe()).resolves.toMatchObject({ id: 123456 });
      await api.callApi('sendMessage', { chat_id: 1, text: 'x' });
      expect(srv.seen[1]).toEqual({ url: `/bot${TOKEN}/sendMessage`, body: '{"chat_id":1,"text":"x"}' });
      expect(api.botId).toBe('123456');
      expect(JSON.stringify(api)).not.toContain('secret');
    } finally {
      api.close();
      await srv.close();
    }
  });

  it('turns ok:false into TelegramApiError with code, description, retry_after and migrate_to_chat_id', async () => {
    let n = 0;
    const srv = await serve((_req, _body, res) => {
      n++;
      if (n === 1)
        json(
          res,
          429,
          {
            ok: false,
            error_code: 429,
            description: 'Too Many Requests: retry after 7',
            parameters: { retry_after: 7 },
          },
          { 'retry-after': '7' },
        );
      else if (n === 2)
        json(res, 400, {
          ok: false,
          error_code: 400,
          description: 'Bad Request: group chat was upgraded to a supergroup chat',
          parameters: { migrate_to_chat_id: -100123 },
        });
      else json(res, 429, { ok: false, error_code: 429, description: 'Too Many Requests' }, { 'retry-after': '3' });
    });
    const api = createBotApiClient({ token: TOKEN, apiRoot: srv.url });
    try {
      const e1 = await api.callApi('sendMessage', {}).catch((e) => e);
      expect(e1).toBeInstanceOf(TelegramApiError);
      expect(e1).toMatchObject({
        code: 'RELAY_TELEGRAM_API_ERROR',
        method: 'sendMessage',
        errorCode: 429,
        retryAfter: 7,
      });
      const e2 = await api.callApi('sendMessage', {}).catch((e) => e);
      expect(e2).toMatchObject({ errorCode: 400, migrateToChatId: -100123 });
      const e3 = await api.callApi('sendMessage', {}).catch((e) => e);
      expect(e3).toMatchObject({ errorCode: 429, retryAfter: 3 }); // from the Retry-After header
    } finally {
      api.close();
      await srv.close();
    }
  });

  it('a 5xx page without an envelope is an API error with the HTTP status', async () => {
    const srv = await serve((_req, _body, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad Gateway</html>');
    });
    const api = createBotApiClient({ token: TOKEN, apiRoot: srv.url });
    try {
      const e = await api.callApi('getUpdates').catch((x) => x);
      expect(e).toMatchObject({ errorCode: 502, description: 'HTTP 502 Bad Gateway' });
    } finally {
      api.close();
      await srv.close();
    }
  });

  it('network failures are TelegramNetworkError (refused, timeout, aborted, dropped) and never carry the token', async () => {
    const srv = await serve((req, _body, res) => {
      if (req.url?.endsWith('/drop')) req.socket.destroy();
      // '/slow' never answers
      else if (!req.url?.endsWith('/slow')) json(res, 200, { ok: true, result: true });
    });
    const api = createBotApiClient({ token: TOKEN, apiRoot: srv.url });
    const dead = createBotApiClient({ token: TOKEN, apiRoot: 'http://127.0.0.1:1' });
    try {
      const refused = await dead.callApi('getMe').catch((e) => e);
      expect(refused).toBeInstanceOf(TelegramNetworkError);
      expect(refused).toMatchObject({ code: 'RELAY_TELEGRAM_NETWORK_ERROR', reason: 'connection' });
      expectNoToken(refused);

      const timeout = await api.callApi('slow', {}, { timeoutMs: 100 }).catch((e) => e);
      expect(timeout).toMatchObject({ reason: 'timeout', requestSent: true });
      expectNoToken(timeout);

      const ac = new AbortController();
      const p = api.callApi('slow', {}, { signal: ac.signal }).catch((e) => e);
      setTimeout(() => ac.abort(), 20);
      expect(await p).toMatchObject({ reason: 'aborted' });

      const dropped = await api.callApi('drop').catch((e) => e);
      expect(dropped).toMatchObject({ reason: 'connection' });
      expectNoToken(dropped);
    } finally {
      api.close();
      dead.close();
      await srv.close();
    }
  });

  it('callApiRaw returns the body text of a 2xx answer', async () => {
    const body = '{"ok":true,"result":[ {"update_id":1} ]}';
    const srv = await serve((_req, _b, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const api = createBotApiClient({ token: TOKEN, apiRoot: srv.url + '/' });
    try {
      await expect(api.callApiRaw('getUpdates', { offset: 1 })).resolves.toEqual({ status: 200, body });
    } finally {
      api.close();
      await srv.close();
    }
  });
});
