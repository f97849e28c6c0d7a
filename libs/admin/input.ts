import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { AdminError } from './errors';

/**
 * Input guards every admin route shares, run as one app-wide preValidation hook (before the
 * route's schema), so a malformed parameter is a 400 whatever route it reaches:
 *
 * - strings must be well-formed UTF-16 (no lone surrogate) and hold no NUL: PostgreSQL's text and
 *   jsonb cannot store them, and Telegram would refuse them; object keys are checked too;
 * - request bodies may nest at most MAX_BODY_DEPTH levels (jsonb parsing of deeper values fails
 *   with "stack depth limit exceeded");
 * - an integer in the path or query string is a plain decimal numeral: ajv's type coercion would
 *   otherwise read `0x10` as 16, `1e3` as 1000 and ` 7` as 7.
 *
 * Ranges are the schemas' job (schemas.ts: ids and chat ids stay within what bigint and a JS
 * number hold exactly); errors.ts maps PostgreSQL input errors to 400 as a last line of defence.
 */
export const MAX_BODY_DEPTH = 32;

/** String.prototype.isWellFormed: ES2024, not in our TypeScript lib, present from Node 20. */
interface WellFormedCheck {
  isWellFormed?: (this: string) => boolean;
}

/** Lone surrogate (the fallback where String.prototype.isWellFormed is missing). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be accepted, or undefined when it is fine. */
export function stringProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain NUL (U+0000)';
  const wellFormed: WellFormedCheck['isWellFormed'] = (String.prototype as WellFormedCheck).isWellFormed;
  if (wellFormed ? !wellFormed.call(s) : LONE_SURROGATE.test(s))
    return 'must be well-formed Unicode (it holds a lone surrogate)';
  return undefined;
}

const badRequest = (field: string, problem: string) =>
  new AdminError('RELAY_ADMIN_VALIDATION', `${field} ${problem}`, {
    field,
    errors: [{ field, message: problem, keyword: 'wellFormed' }],
  });

/** Walks a parsed value iteratively (no recursion: a hostile body cannot blow the stack). */
export function checkValue(root: unknown, context: string, maxDepth = MAX_BODY_DEPTH): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: root, path: context, depth: 0 }];
  while (stack.length) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      const p = stringProblem(v);
      if (p) throw badRequest(path, p);
    } else if (v !== null && typeof v === 'object') {
      if (depth >= maxDepth) throw badRequest(path, `nests deeper than ${maxDepth} levels`);
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) stack.push({ v: v[i], path: `${path}.${i}`, depth: depth + 1 });
      } else {
        for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
          const p = stringProblem(k);
          if (p) throw badRequest(`${path} key`, p);
          stack.push({ v: child, path: `${path}.${k}`, depth: depth + 1 });
        }
      }
    }
  }
}

interface PropertySchema {
  type?: string | string[];
  anyOf?: PropertySchema[];
}

function isIntegerOnly(s: PropertySchema | undefined): boolean {
  if (!s) return false;
  if (s.anyOf) return s.anyOf.length > 0 && s.anyOf.every(isIntegerOnly);
  const types = [s.type ?? []].flat();
  return types.length > 0 && types.every((t) => t === 'integer' || t === 'number');
}

const DECIMAL = /^-?[0-9]{1,20}$/;

/** Integer-typed path and query parameters must be plain decimal numerals. */
function checkNumerals(values: unknown, schema: unknown, context: string): void {
  const props = (schema as { properties?: Record<string, PropertySchema> } | undefined)?.properties;
  if (!props || !values || typeof values !== 'object') return;
  for (const [k, raw] of Object.entries(values as Record<string, unknown>)) {
    if (!isIntegerOnly(props[k])) continue;
    for (const v of [raw].flat()) {
      if (typeof v === 'string' && !DECIMAL.test(v))
        throw badRequest(`${context}.${k}`, 'must be an integer written in decimal digits');
    }
  }
}

/** The app-wide preValidation hook (callback style: fastify passes what a check throws on as the error). */
export function guardInput(req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const schema = req.routeOptions.schema;
  checkValue(req.params, 'params', 2);
  checkValue(req.query, 'querystring', 2);
  checkNumerals(req.params, schema?.params, 'params');
  checkNumerals(req.query, schema?.querystring, 'querystring');
  if (req.body !== undefined) checkValue(req.body, 'body');
  done();
}
