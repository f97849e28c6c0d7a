import os from 'node:os';
import Fastify, {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyTypeProviderDefault,
  LogController,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import swagger, { SwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Pool } from 'pg';
import type { JobLedger } from '../db/boss';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { errorCode } from '../errors';
import { AdminActions, defaultActions } from './actions';
import { AdminToken, bearerAuth, tokensFromConfig } from './auth';
import type { AdminContext } from './context';
import { apiError, installErrorHandlers, sendApiError } from './errors';
import { guardInput } from './input';
import { ingressHealth as ingressHealthOfCursor } from '../ingress/health';
import { IngressHealthFn, readinessChecker } from './health';
import { createAdminMetrics } from './metrics';
import { readRoutes } from './routes/read';
import { chatStatusRoutes } from './routes/chat-status';
import { statusRoutes } from './routes/status';
import { writeRoutes } from './routes/write';
import { timeseriesRoutes } from './routes/timeseries';
import { SandboxPanelOptions, sandboxRoutes } from './routes/sandbox';
import { dashboardRoutes, isDashboardRoute } from './ui/serve';
import { SHARED_SCHEMAS } from './schemas';
import type { PendingUpdatesSource } from './webhook-info';

export const ADMIN_BODY_LIMIT = 64 * 1024;
export const BULK_LIMIT_DEFAULT = 1000;
export const ADMIN_API_VERSION = '1.0.0';

const ROUTES = new WeakMap<object, { method: string; url: string; hidden: boolean }[]>();

/** Every route the app registered (method, URL, hidden from the OpenAPI document or not). */
export function adminRoutes(app: FastifyInstance): { method: string; url: string; hidden: boolean }[] {
  return ROUTES.get(app) ?? [];
}

/**
 * The OpenAPI document's header; the routes' schemas make the rest. A fresh object for each app:
 * the plugin keeps what it is given.
 */
const openapiOptions = (): SwaggerOptions => ({
  openapi: {
    openapi: '3.0.3',
    info: {
      title: 'tg-relay admin API',
      version: ADMIN_API_VERSION,
      description:
        'Inspect, retry, recover, cancel and enqueue. Every route but GET /health/live needs `Authorization: Bearer <token>`. ' +
        'Errors are JSON `{ code, message, field? }` with a stable code.',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
  },
  refResolver: {
    buildLocalReference: (json, _baseUri, _fragment, i) => String((json as { $id?: string }).$id ?? `def-${i}`),
  },
});

export interface BuildAdminAppOptions {
  pool: Pool;
  boss: JobLedger;
  config: Config;
  logger: Logger;
  clock?: () => Date;
  /** Accepted tokens; default: ADMIN_TOKEN and ADMIN_TOKENS from config. Must not be empty. */
  tokens?: AdminToken[];
  /** Per-bot ingress readiness; default: libs/ingress's ingressHealth. */
  ingressHealth?: IngressHealthFn;
  /** Telegram's pending_update_count per bot (getWebhookInfo), cached. */
  pendingUpdates?: PendingUpdatesSource;
  /** Bots /health/ready checks; default: every bot with a cursor row. */
  botIds?: string[];
  /** Mutations; defaults come from the worker engine, outbound and ingress libraries. */
  actions?: Partial<AdminActions>;
  instanceId?: string;
  /** Node process metrics (GC, heap, event loop) on /metrics; off in tests. */
  processMetrics?: boolean;
  bulkLimit?: number;
  /** Sandbox mode: the dashboard's chat panel injects user messages into this Bot API sandbox. */
  sandbox?: SandboxPanelOptions;
}

/**
 * The admin API as a Fastify instance, not listening: `apps/admin/main.ts` listens, tests use
 * `app.inject`. Everything but GET /health/live needs `Authorization: Bearer <token>`.
 */
export async function buildAdminApp(opts: BuildAdminAppOptions): Promise<FastifyInstance> {
  const tokens = opts.tokens ?? tokensFromConfig(opts.config);
  if (tokens.length === 0)
    throw new Error('buildAdminApp: no admin token (resolveAdminTokens decides what to do without one)');
  const clock = opts.clock ?? (() => new Date());
  const logger = opts.logger.child({ component: 'admin-api' });
  const app = Fastify<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger>({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: ADMIN_BODY_LIMIT,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
    return503OnClosing: true,
    // a path fastify cannot decode (FST_ERR_BAD_URL, bad percent-encoding) or a parameter over
    // maxParamLength: answered before any route, so in the API's error format here
    frameworkErrors: (err, _req, r) => {
      // fastify types a framework error's reply by the (not yet known) route's schema: any reply will do
      const reply = r as FastifyReply;
      void sendApiError(reply, apiError('RELAY_ADMIN_BAD_REQUEST', err.message, { cause: errorCode(err) }));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const ctx = adminContext(opts, logger, clock);

  const routes: { method: string; url: string; hidden: boolean }[] = [];
  ROUTES.set(app, routes);
  app.addHook('onRoute', (r) => {
    for (const m of [r.method].flat())
      if (m !== 'HEAD') routes.push({ method: m, url: r.url, hidden: !!r.schema?.hide || r.url.startsWith('/docs') });
  });
  installErrorHandlers(app);
  const docsPublic = opts.config.ADMIN_DOCS_PUBLIC;
  const isPublic = (req: FastifyRequest) => {
    const url = req.routeOptions.url;
    if (url === '/health/live') return true;
    if (isDashboardRoute(url)) return true; // the page and its assets hold no data; the API calls carry the token
    return docsPublic && !!url && (url === '/openapi.json' || url === '/docs' || url.startsWith('/docs/'));
  };
  app.addHook('onRequest', bearerAuth(tokens, isPublic));
  app.addHook('preValidation', guardInput);
  app.addHook('onResponse', async (req, reply) => {
    ctx.metrics.request(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode);
    req.log.debug(
      {
        method: req.method,
        url: req.routeOptions.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        actor: req.actor,
      },
      'admin request',
    );
  });
  for (const s of SHARED_SCHEMAS) app.addSchema(s);

  await app.register(swagger, openapiOptions());
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());

  await app.register(statusRoutes, { ctx });
  await app.register(readRoutes, { ctx });
  await app.register(chatStatusRoutes, { ctx });
  await app.register(writeRoutes, { ctx });
  await app.register(timeseriesRoutes, { ctx });
  if (opts.sandbox) await app.register(sandboxRoutes, { ctx, sandbox: opts.sandbox });
  await app.register(dashboardRoutes);
  await app.ready();
  // callers need only a plain FastifyInstance (inject, listen, close): the TypeBox provider types the
  // routes registered above and nothing at run time, so the instance is handed out without it
  return app.withTypeProvider<FastifyTypeProviderDefault>();
}

/** The routes' shared context: options with their defaults, readiness, metrics and the actions. */
function adminContext(opts: BuildAdminAppOptions, logger: Logger, clock: () => Date): AdminContext {
  const ingressHealth = opts.ingressHealth ?? ingressHealthOfCursor;
  return {
    pool: opts.pool,
    boss: opts.boss,
    config: opts.config,
    logger,
    clock,
    instanceId: opts.instanceId ?? `admin@${os.hostname()}:${process.pid}`,
    ingressHealth,
    pendingUpdates: opts.pendingUpdates,
    readiness: readinessChecker({
      pool: opts.pool,
      clock,
      ingressHealth,
      pollTimeoutMs: opts.config.POLL_TIMEOUT,
      botIds: opts.botIds,
    }),
    metrics: createAdminMetrics({ db: opts.pool, clock, logger, processMetrics: opts.processMetrics }),
    actions: {
      ...defaultActions({ pool: opts.pool, boss: opts.boss, config: opts.config, logger, clock }),
      ...opts.actions,
    },
    bulkLimit: opts.bulkLimit ?? BULK_LIMIT_DEFAULT,
  };
}
