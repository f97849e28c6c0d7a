import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import { errorCode, RelayError } from '../errors';

/**
 * Stable error codes of the admin API. Clients branch on `code`, never on `message`.
 * Each maps to one HTTP status; the JSON body is always `{ code, message, ...details }`.
 */
export const ADMIN_ERRORS = {
  RELAY_ADMIN_UNAUTHORIZED: 401,
  RELAY_ADMIN_VALIDATION: 400,
  RELAY_ADMIN_BAD_REQUEST: 400,
  RELAY_ADMIN_BAD_CURSOR: 400,
  RELAY_ADMIN_TRACEPARENT_INVALID: 400,
  RELAY_ADMIN_NOT_FOUND: 404,
  RELAY_ADMIN_ROUTE_NOT_FOUND: 404,
  RELAY_ADMIN_NOT_FAILED: 409,
  RELAY_ADMIN_NOT_PENDING: 409,
  RELAY_ADMIN_NOT_QUARANTINED: 409,
  RELAY_ADMIN_RELEASE_FAILED: 409,
  RELAY_OUTBOUND_CONFLICT: 409,
  RELAY_ADMIN_PAYLOAD_TOO_LARGE: 413,
  RELAY_ADMIN_UNAVAILABLE: 503,
  RELAY_ADMIN_INTERNAL: 500,
} as const;
export type AdminErrorCode = keyof typeof ADMIN_ERRORS;

/** An error the admin API answers with as-is: its status comes from the code. */
export class AdminError extends RelayError {
  readonly statusCode: number;
  constructor(
    readonly code: AdminErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AdminError';
    this.statusCode = ADMIN_ERRORS[code];
  }
}

export const notFound = (what: string, id: string | number) =>
  new AdminError('RELAY_ADMIN_NOT_FOUND', `${what} ${id} does not exist`, { id: String(id) });

interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * The field a schema violation is about, as `where.path` (`querystring.limit`, `body.chat_id`,
 * `params.id`): ajv reports the parent object for missing and additional properties, so those
 * are resolved to the property named in `params`.
 */
export function fieldOf(context: string | undefined, issue: AjvIssue): string {
  const segments = (issue.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const named = issue.params?.missingProperty ?? issue.params?.additionalProperty ?? issue.params?.propertyName;
  if (typeof named === 'string') segments.push(named);
  return [context ?? 'request', ...segments].join('.');
}

/**
 * PostgreSQL errors that mean an input value was unusable, not that the server failed: class 22
 * (data exception: 22003 numeric out of range, 22P02 invalid text representation, 22021 invalid
 * byte sequence such as NUL, 22007/22008 bad or overflowing date-time, 22P05 untranslatable
 * character) and 54001 (a value nested too deep for jsonb). Only errors carrying PostgreSQL's
 * `severity` and five-character SQLSTATE count, so a Node error code never matches.
 */
export function isPgInputError(err: unknown): boolean {
  const code = errorCode(err);
  const severity = typeof err === 'object' && err !== null && 'severity' in err ? err.severity : undefined;
  if (code === undefined || typeof severity !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false;
  return code.startsWith('22') || code === '54001';
}

function send(reply: FastifyReply, status: number, body: Record<string, unknown>): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Maps every error to the stable JSON shape; unexpected ones are logged and become a 500. */
export function installErrorHandlers<L extends FastifyBaseLogger, P extends FastifyTypeProvider>(
  app: FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, L, P>,
): void {
  app.setErrorHandler(
    (err: FastifyError & { validationContext?: string }, request: FastifyRequest, reply: FastifyReply) => {
      if (err instanceof AdminError) {
        return send(reply, err.statusCode, { code: err.code, message: err.message, ...err.details });
      }
      if (err.validation && err.validation.length > 0) {
        const issues = err.validation as AjvIssue[];
        const first = issues[0];
        const field = fieldOf(err.validationContext, first);
        const detail =
          first.keyword === 'additionalProperties' ? 'is not a known field' : (first.message ?? 'is invalid');
        return send(reply, 400, {
          code: 'RELAY_ADMIN_VALIDATION',
          message: `${field} ${detail}`,
          field,
          errors: issues.map((i) => ({
            field: fieldOf(err.validationContext, i),
            message: i.message ?? 'is invalid',
            keyword: i.keyword,
          })),
        });
      }
      const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
      if (status === 413) return send(reply, 413, { code: 'RELAY_ADMIN_PAYLOAD_TOO_LARGE', message: err.message });
      if (status >= 400 && status < 500) {
        // fastify's own request errors (bad JSON, wrong content type…): keep its code as `cause`
        return send(reply, status, { code: 'RELAY_ADMIN_BAD_REQUEST', message: err.message, cause: err.code });
      }
      const code = errorCode(err);
      if (isPgInputError(err)) {
        // last line of defence: the schemas and guardInput (input.ts) should have refused the value
        request.log.warn(
          { err, route: request.routeOptions.url },
          'admin request: PostgreSQL refused a parameter (answered 400; a schema should catch this)',
        );
        return send(reply, 400, {
          code: 'RELAY_ADMIN_BAD_REQUEST',
          message: 'a parameter is malformed or out of range',
          cause: code,
        });
      }
      request.log.error({ err }, 'admin request failed');
      if (
        code === 'ECONNREFUSED' ||
        code === '57P01' ||
        code === '53300' ||
        /timeout exceeded when trying to connect/i.test(err.message)
      ) {
        return send(reply, 503, { code: 'RELAY_ADMIN_UNAVAILABLE', message: 'the database is not reachable' });
      }
      return send(reply, 500, { code: 'RELAY_ADMIN_INTERNAL', message: 'internal error (see the admin log)' });
    },
  );
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
    send(reply, 404, {
      code: 'RELAY_ADMIN_ROUTE_NOT_FOUND',
      message: `no route ${request.method} ${request.url.split('?')[0]}`,
    }),
  );
}
