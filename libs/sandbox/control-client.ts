/**
 * A small client for the sandbox control APIs (Bot API sandbox and collector), for processes that
 * did not start the sandbox: the CLI (`tg-relay sandbox send`), subprocess tests, the soak.
 */
import { errorCode, fieldOf } from '../errors';
import type { CollectorAttempt, CollectorReceipt, CollectorStats } from './collector';
import type { CollectorFaults } from './collector-faults';
import type { RateLimitsInput } from './rate-limiter';
import type {
  BotStateSummary,
  CallRecord,
  FaultConfig,
  InjectCallbackInput,
  InjectMessageInput,
  InjectMessagesInput,
  InjectMessagesResult,
  RateLimitConfig,
  SandboxStats,
  ScriptedChatError,
  SentMessage,
  TgUpdate,
} from './types';

export class SandboxControlError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'SandboxControlError';
  }
}

async function call<T>(baseUrl: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const url = `${baseUrl.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: body === undefined ? undefined : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    const cause = errorCode(fieldOf(err, 'cause'));
    throw new SandboxControlError(
      `cannot reach the sandbox at ${baseUrl}${cause ? ` (${cause})` : ''}: is it running?`,
      0,
    );
  }
  const text = await res.text();
  let parsed: { ok?: boolean; result?: unknown; description?: string };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw new SandboxControlError(`unexpected answer from ${url}: HTTP ${res.status}`, res.status);
  }
  if (!res.ok || parsed.ok !== true)
    throw new SandboxControlError(parsed.description ?? `HTTP ${res.status}`, res.status);
  return parsed.result as T;
}

const q = (params: Record<string, string | undefined>): string => {
  const s = new URLSearchParams(
    Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined),
  ).toString();
  return s ? `?${s}` : '';
};

export function createSandboxClient(baseUrl: string) {
  return {
    health: () => call<{ status: string }>(baseUrl, 'GET', '/sandbox/health'),
    injectMessage: (token: string, input: InjectMessageInput) =>
      call<TgUpdate>(baseUrl, 'POST', '/sandbox/inject/message', { token, ...input }),
    injectMessages: (token: string, count: number, input: InjectMessagesInput) =>
      call<InjectMessagesResult>(baseUrl, 'POST', '/sandbox/inject/messages', { token, count, ...input }),
    injectCallbackQuery: (token: string, input: InjectCallbackInput) =>
      call<TgUpdate>(baseUrl, 'POST', '/sandbox/inject/callback', { token, ...input }),
    injectRawUpdate: (token: string, raw: unknown) =>
      call<{ slot: number }>(
        baseUrl,
        'POST',
        '/sandbox/inject/raw',
        typeof raw === 'string' ? { token, rawText: raw } : { token, raw },
      ),
    resetUpdateIds: (token: string, nextUpdateId: number) =>
      call<true>(baseUrl, 'POST', '/sandbox/reset-update-ids', { token, nextUpdateId }),
    sent: (token: string) => call<SentMessage[]>(baseUrl, 'GET', `/sandbox/sent${q({ token })}`),
    answeredCallbacks: (token: string) =>
      call<Array<{ callback_query_id: string; text?: string; show_alert?: boolean }>>(
        baseUrl,
        'GET',
        `/sandbox/callbacks${q({ token })}`,
      ),
    calls: (token?: string, method?: string) =>
      call<CallRecord[]>(baseUrl, 'GET', `/sandbox/calls${q({ token, method })}`),
    botState: (token: string) => call<BotStateSummary>(baseUrl, 'GET', `/sandbox/bot${q({ token })}`),
    stats: () => call<SandboxStats>(baseUrl, 'GET', '/sandbox/stats'),
    setFaults: (faults: FaultConfig | null, token?: string) =>
      call<true>(baseUrl, 'POST', '/sandbox/faults', { faults, token }),
    setLimits: (limits: RateLimitsInput) => call<RateLimitConfig>(baseUrl, 'POST', '/sandbox/limits', limits),
    scriptChatError: (
      token: string | undefined,
      chatId: number | string,
      error: ScriptedChatError | ScriptedChatError['kind'] | null,
    ) => call<true>(baseUrl, 'POST', '/sandbox/chat-error', { token, chatId, error }),
    revokeToken: (token: string) => call<true>(baseUrl, 'POST', '/sandbox/revoke', { token }),
    reset: () => call<true>(baseUrl, 'POST', '/sandbox/reset'),
  };
}

export type SandboxClient = ReturnType<typeof createSandboxClient>;

export function createCollectorClient(baseUrl: string) {
  return {
    health: () => call<{ status: string }>(baseUrl, 'GET', '/sandbox/health'),
    received: () => call<CollectorReceipt[]>(baseUrl, 'GET', '/sandbox/received'),
    keys: () => call<Record<string, CollectorReceipt[]>>(baseUrl, 'GET', '/sandbox/keys'),
    duplicates: () => call<Array<{ key: string; count: number }>>(baseUrl, 'GET', '/sandbox/duplicates'),
    attempts: () => call<CollectorAttempt[]>(baseUrl, 'GET', '/sandbox/attempts'),
    stats: () => call<CollectorStats>(baseUrl, 'GET', '/sandbox/stats'),
    setFaults: (faults: CollectorFaults | null) => call<true>(baseUrl, 'POST', '/sandbox/faults', { faults }),
    reset: () => call<true>(baseUrl, 'POST', '/sandbox/reset'),
  };
}

export type CollectorClient = ReturnType<typeof createCollectorClient>;
