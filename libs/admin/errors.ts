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
import { errorCode, RELAY_CODES, RelayCode, RelayError } from '../errors';

/** The registry's codes that are HTTP answers: the admin API's error codes. */
export type AdminErrorCode = {
  [K in RelayCode]: (typeof RELAY_CODES)[K] extends { http: number } ? K : never;
}[RelayCode];

/** The HTTP status of an admin API error code, as the registry gives it. */
export type AdminStatus<C extends AdminErrorCode> = (typeof RELAY_CODES)[C] extends { http: infer H } ? H : never;

/**
 * Stable error codes of the admin API and their HTTP statuses, as the registry (libs/errors/codes.ts)
 * gives them. Clients branch on `code`, never on `message`.
 */
export const ADMIN_ERRORS = Object.fromEntries(
  Object.entries(RELAY_CODES).flatMap(([code, entry]) => ('http' in entry ? [[code, entry.http]] : [])),
) as { [C in AdminErrorCode]: AdminStatus<C> };

/** An error answer of the admin API: the status its code has in the registry, and the JSON body. */
export interface ApiErrorAnswer<C extends AdminErrorCode = AdminErrorCode> {
  status: number;
  body: { code: C; message: string } & Record<string, unknown>;
}

/**
 * The one builder of the admin API's error answers: the body is always `{ code, message, ...extra }`,
 * and the status is the code's, so a route cannot answer a code with another status.
 */
export function apiError<C extends AdminErrorCode>(
  code: C,
  message: string,
  extra: Record<string, unknown> = {},
): ApiErrorAnswer<C> & { status: AdminStatus<C> } {
  return { status: ADMIN_ERRORS[code], body: { code, message, ...extra } };
}

/** Sends an error answer as JSON. */
export function sendApiError(reply: FastifyReply, answer: ApiErrorAnswer): FastifyReply {
  return reply.code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}

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
    this.statusCode = ADMIN_ERRORS[code];
  }

  /** The answer this error is sent as. */
  answer(): ApiErrorAnswer {
    return apiError(this.code, this.message, this.details);
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

/** Maps every error to the stable JSON shape; unexpected ones are logged and become a 500. */
export function installErrorHandlers<L extends FastifyBaseLogger, P extends FastifyTypeProvider>(
  app: FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, L, P>,
): void {
  app.setErrorHandler(
    (err: FastifyError & { validationContext?: string }, request: FastifyRequest, reply: FastifyReply) => {
      if (err instanceof AdminError) {
        return sendApiError(reply, err.answer());
      }
      if (err.validation && err.validation.length > 0) {
        const issues = err.validation as AjvIssue[];
        const first = issues[0];
        const field = fieldOf(err.validationContext, first);
        const detail =
          first.keyword === 'additionalProperties' ? 'is not a known field' : (first.message ?? 'is invalid');
        return sendApiError(
          reply,
          apiError('RELAY_ADMIN_VALIDATION', `${field} ${detail}`, {
            field,
            errors: issues.map((i) => ({
              field: fieldOf(err.validationContext, i),
              message: i.message ?? 'is invalid',
              keyword: i.keyword,
            })),
          }),
        );
      }
      const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
      if (status === 413) return sendApiError(reply, apiError('RELAY_ADMIN_PAYLOAD_TOO_LARGE', err.message));
      if (status >= 400 && status < 500) {
        // fastify's own request errors (bad JSON, wrong content type…): keep its code as `cause`
        const answer = apiError('RELAY_ADMIN_BAD_REQUEST', err.message, { cause: err.code });
        return sendApiError(reply, { ...answer, status });
      }
      const code = errorCode(err);
      if (isPgInputError(err)) {
        // last line of defence: the schemas and guardInput (input.ts) should have refused the value
        request.log.warn(
          { err, route: request.routeOptions.url },
          'admin request: PostgreSQL refused a parameter (answered 400; a schema should catch this)',
        );
        return sendApiError(
          reply,
          apiError('RELAY_ADMIN_BAD_REQUEST', 'a parameter is malformed or out of range', { cause: code }),
        );
      }
      request.log.error({ err }, 'admin request failed');
      if (
        code === 'ECONNREFUSED' ||
        code === '57P01' ||
        code === '53300' ||
        /timeout exceeded when trying to connect/i.test(err.message)
      ) {
        return sendApiError(reply, apiError('RELAY_ADMIN_UNAVAILABLE', 'the database is not reachable'));
      }
      return sendApiError(reply, apiError('RELAY_ADMIN_INTERNAL', 'internal error (see the admin log)'));
    },
  );
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
    sendApiError(
      reply,
      apiError('RELAY_ADMIN_ROUTE_NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}
