import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config';
import { AdminError } from './errors';
import { RelayError } from '../errors/relay-error';

/** A bearer token and the label recorded as `actor` in the audit trail for calls made with it. */
export interface AdminToken {
  label: string;
  token: string;
}

/** Label of `ADMIN_TOKEN` in the audit trail. */
export const ADMIN_TOKEN_LABEL = 'admin';
/** Label of the token generated for a loopback-only admin API started without one. */
export const GENERATED_TOKEN_LABEL = 'local';

export class AdminStartError extends RelayError {
  readonly code = 'RELAY_ADMIN_INSECURE_BINDING';
  constructor(message: string) {
    super(message);
  }
}

/** `ADMIN_TOKEN` (label "admin") and every `ADMIN_TOKENS` pair. A token may appear only once. */
export function tokensFromConfig(config: Pick<Config, 'ADMIN_TOKEN' | 'ADMIN_TOKENS'>): AdminToken[] {
  const out: AdminToken[] = [];
  if (config.ADMIN_TOKEN) out.push({ label: ADMIN_TOKEN_LABEL, token: config.ADMIN_TOKEN });
  for (const t of config.ADMIN_TOKENS ?? []) {
    if (out.some((o) => o.label === t.label))
      throw new AdminStartError(
        `ADMIN_TOKENS: label "${t.label}" is used twice (ADMIN_TOKEN is labelled "${ADMIN_TOKEN_LABEL}")`,
      );
    if (out.some((o) => o.token === t.token))
      throw new AdminStartError(`ADMIN_TOKENS: the token labelled "${t.label}" is also used by another label`);
    out.push(t);
  }
  return out;
}

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1 and "localhost". */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  if (/^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  return false;
}

/**
 * The tokens the admin API accepts, decided at start:
 * - tokens configured → those;
 * - none, and the host is loopback → one random token for this process (label "local"), which the
 *   caller prints so that the operator on this machine can use it;
 * - none, and any other host → refuses to start, saying why.
 */
export function resolveAdminTokens(config: Pick<Config, 'ADMIN_TOKEN' | 'ADMIN_TOKENS' | 'ADMIN_HOST'>): {
  tokens: AdminToken[];
  generated?: AdminToken;
} {
  const tokens = tokensFromConfig(config);
  if (tokens.length > 0) return { tokens };
  if (!isLoopbackHost(config.ADMIN_HOST)) {
    throw new AdminStartError(
      `refusing to serve the admin API on ${config.ADMIN_HOST} without a token: it can retry, cancel and enqueue messages. ` +
        'Set ADMIN_TOKEN (at least 16 characters, e.g. `openssl rand -hex 24`) or ADMIN_TOKENS=label:token,…, or bind to 127.0.0.1 with ADMIN_HOST.',
    );
  }
  const generated = { label: GENERATED_TOKEN_LABEL, token: crypto.randomBytes(24).toString('base64url') };
  return { tokens: [generated], generated };
}

const digest = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest();

/**
 * A checker that compares in constant time: both sides are hashed to 32 bytes (so lengths leak
 * nothing) and every configured token is compared, without an early exit.
 */
export function tokenChecker(tokens: AdminToken[]): (presented: string) => AdminToken | undefined {
  const hashed = tokens.map((t) => ({ t, h: digest(t.token) }));
  return (presented) => {
    const p = digest(presented);
    let found: AdminToken | undefined;
    for (const { t, h } of hashed) {
      if (crypto.timingSafeEqual(p, h) && !found) found = t;
    }
    return found;
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Label of the token the caller presented (the audit trail's `actor`). */
    actor?: string;
  }
}

/** An `onRequest` hook: `Authorization: Bearer <token>` or 401 with a stable code. */
export function bearerAuth(tokens: AdminToken[], isPublic: (req: FastifyRequest) => boolean) {
  const check = tokenChecker(tokens);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (isPublic(req)) return;
    const header = req.headers.authorization;
    reply.header('www-authenticate', 'Bearer realm="tg-relay-admin"');
    if (!header)
      throw new AdminError('RELAY_ADMIN_UNAUTHORIZED', 'missing Authorization: Bearer <token> header', {
        reason: 'missing',
      });
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const found = m ? check(m[1]) : undefined;
    if (!found) {
      req.log.warn({ ip: req.ip, url: req.url }, 'admin API: rejected token');
      throw new AdminError('RELAY_ADMIN_UNAUTHORIZED', 'invalid bearer token', { reason: m ? 'invalid' : 'malformed' });
    }
    reply.removeHeader('www-authenticate');
    req.actor = found.label;
  };
}
