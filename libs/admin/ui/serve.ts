import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { PACKAGE_ROOT } from '../../runtime/package-root';

/** The committed bundle (`npm run build:ui` writes it; a unit test checks it matches src/). */
export const DASHBOARD_DIST = path.join(PACKAGE_ROOT, 'libs/admin/ui/dist');
/** Where the bundle's files are served; the page itself is `/`. */
export const DASHBOARD_ASSET_PREFIX = '/ui/';

/**
 * The page holds no data (it asks the API for everything with the operator's token), so it and
 * its assets are served without a token. The strict policy is there because the dashboard shows
 * text that Telegram users wrote: no inline script, nothing loaded from elsewhere.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** True for the routes of this plugin: the admin app's auth hook lets them through. */
export function isDashboardRoute(url: string | undefined): boolean {
  return url === '/' || (!!url && url.startsWith(DASHBOARD_ASSET_PREFIX));
}

/** Serves the operator dashboard: `/` (index.html) and `/ui/*` (script, styles) from DASHBOARD_DIST. */
export const dashboardRoutes: FastifyPluginAsync<{ dist?: string }> = async (app, opts) => {
  const dist = opts.dist ?? DASHBOARD_DIST;
  const index = fs.readFileSync(path.join(dist, 'index.html'));
  await app.register(fastifyStatic, {
    root: dist,
    prefix: DASHBOARD_ASSET_PREFIX,
    decorateReply: false,
    index: false,
    // the bundle is rebuilt in place and its names do not change: browsers revalidate every time
    cacheControl: true,
    maxAge: 0,
    setHeaders: (reply) => {
      reply.headers(SECURITY_HEADERS);
    },
  });
  app.get('/', { schema: { hide: true } }, async (_req, reply) =>
    reply
      .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(index),
  );
};
