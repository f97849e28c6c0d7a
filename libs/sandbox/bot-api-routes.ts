/**
 * HTTP handling of `/bot<token>/<method>`: authentication (401), method lookup (404), fault
 * injection (latency, drop before, 5xx, drop after), the method itself and the call record.
 * The token never reaches a record or a log: only the bot id does.
 */
import { sleep } from '../lifecycle/timers';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TG_DESCRIPTIONS } from './constants';
import { SERVER_ERROR_TEXT } from './faults';
import { BotApiError, parseMultipart, parseParams, readBody, sendJson, type UploadedPart } from './http-io';
import { findMethod } from './methods';
import { ClientGone, RawJson } from './polling';
import type { SandboxCore } from './sandbox-core';
import type { CallOutcome, CallRecord } from './types';

function botIdOf(token: string): number {
  const m = /^(\d{1,20}):/.exec(token);
  return m ? Number(m[1]) : 0;
}

function dropConnection(req: IncomingMessage, res: ServerResponse): void {
  res.destroy();
  req.socket.destroy();
}

function writeError(res: ServerResponse, err: BotApiError): void {
  const headers: Record<string, string> = {};
  if (err.errorCode === 429 && err.parameters?.retry_after !== undefined)
    headers['Retry-After'] = String(err.parameters.retry_after);
  sendJson(res, err.errorCode, err.envelope(), headers);
}

export async function handleBotApiRequest(
  core: SandboxCore,
  req: IncomingMessage,
  res: ServerResponse,
  token: string,
  methodName: string,
  url: URL,
): Promise<void> {
  const started = Date.now();
  let params: Record<string, unknown> = {};
  let files: UploadedPart[] = [];
  const record = (botId: number, method: string, outcome: CallOutcome, status: number, err?: BotApiError): void => {
    const r: Omit<CallRecord, 'seq'> = {
      bot_id: botId,
      method,
      params,
      time: started,
      duration_ms: Date.now() - started,
      outcome,
      status,
      via: 'http',
    };
    if (files.length > 0)
      r.files = files.map((f) => ({ part: f.part, filename: f.filename, bytes_base64: f.bytes.toString('base64') }));
    if (err) {
      r.error_code = err.errorCode;
      r.description = err.description;
    }
    core.callLog.add(r);
  };

  let bot;
  try {
    bot = core.registry.authenticate(token);
  } catch (err) {
    const e = err as BotApiError;
    writeError(res, e);
    record(botIdOf(token), methodName, 'error', e.errorCode, e);
    return;
  }
  const def = findMethod(methodName);
  if (!def) {
    const e = new BotApiError(404, TG_DESCRIPTIONS.notFound);
    writeError(res, e);
    record(bot.id, methodName, 'error', 404, e);
    return;
  }

  try {
    const body = await readBody(req);
    params = parseParams(url, req.headers['content-type'], body);
    const ct = req.headers['content-type'] ?? '';
    if (ct.toLowerCase().includes('multipart/form-data')) files = parseMultipart(ct, body).files;
  } catch (err) {
    const e = err instanceof BotApiError ? err : new BotApiError(400, 'Bad Request');
    if (!res.destroyed) writeError(res, e);
    record(bot.id, def.name, 'error', e.errorCode, e);
    return;
  }

  const fault = core.faults.decide(bot.id, def.name);
  if (fault.latencyMs > 0) await sleep(fault.latencyMs, undefined, { unref: true });
  if (fault.kind === 'drop_before') {
    dropConnection(req, res);
    record(bot.id, def.name, 'dropped_before', 0);
    return;
  }
  if (fault.kind === 'server_error') {
    const status = fault.serverErrorStatus;
    const e = new BotApiError(status, SERVER_ERROR_TEXT[status] ?? 'Server Error');
    sendJson(res, status, e.envelope());
    record(bot.id, def.name, 'server_error', status, e);
    return;
  }

  if (fault.kind === 'html_ok' || fault.kind === 'html_error') {
    // a proxy's page: not a Bot API answer, nothing processed
    const status = fault.kind === 'html_ok' ? 200 : fault.serverErrorStatus;
    const page = `<html><head><title>${status}</title></head><body><h1>${status} ${SERVER_ERROR_TEXT[status] ?? 'Proxy'}</h1><p>upstream unavailable</p></body></html>`;
    res.writeHead(status, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(page) });
    res.end(page);
    record(bot.id, def.name, 'glitch', status);
    return;
  }

  let result: unknown;
  let error: BotApiError | undefined;
  try {
    result = await def.handler(bot, params, core.env, {
      files,
      onClientClose: (cb) =>
        res.on('close', () => {
          if (!res.writableFinished) cb();
        }),
    });
  } catch (err) {
    if (err instanceof ClientGone) {
      record(bot.id, def.name, 'client_closed', 0);
      return;
    }
    if (err instanceof BotApiError) error = err;
    else {
      core.logger.error({ err, method: def.name, botId: bot.id }, 'sandbox method failed');
      error = new BotApiError(500, 'Internal Server Error');
    }
  }

  if (fault.kind === 'drop_after') {
    // Processed (a send IS recorded), but the client never learns the outcome.
    dropConnection(req, res);
    record(bot.id, def.name, 'dropped_after', 0, error);
    return;
  }
  if (fault.kind === 'truncated') {
    // processed, then a body cut in the middle that still ends cleanly (chunked, as a proxy may)
    const full = error
      ? JSON.stringify(error.envelope())
      : result instanceof RawJson
        ? `{"ok":true,"result":${result.text}}`
        : JSON.stringify({ ok: true, result });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(full.slice(0, Math.max(1, Math.floor(full.length / 2))));
    record(bot.id, def.name, 'glitch', 200, error);
    return;
  }
  if (error) {
    writeError(res, error);
    record(bot.id, def.name, error.errorCode === 429 ? 'rate_limited' : 'error', error.errorCode, error);
    return;
  }
  const text = result instanceof RawJson ? `{"ok":true,"result":${result.text}}` : JSON.stringify({ ok: true, result });
  sendJson(res, 200, text);
  record(bot.id, def.name, 'ok', 200);
}
