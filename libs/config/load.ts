import { ConfigError } from './errors';
import { Config, configSchema, crossFieldProblems, SECRET_VARIABLES } from './schema';

/**
 * Reads and validates the configuration once. Empty strings count as unset, so `FOO=` in a
 * compose file falls back to the default instead of failing validation.
 * Throws a `ConfigError` that names every bad variable and what it expects.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const parsed = configSchema.safeParse(input);
  const problems = parsed.success
    ? crossFieldProblems(parsed.data)
    : parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), problem: i.message }));
  if (problems.length > 0 || !parsed.success) {
    const lines = problems.map((p) => `  ${p.variable}: ${p.problem}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`, problems);
  }
  return parsed.data;
}

/** The effective configuration as printable lines, secrets masked (password in DATABASE_URL too). */
export function describeConfig(config: Config): string[] {
  return Object.keys(configSchema.shape).map((k) => {
    const v = (config as Record<string, unknown>)[k];
    let shown: string;
    if (v === undefined || (Array.isArray(v) && v.length === 0 && k !== 'ALLOWED_CHAT_IDS')) shown = '(unset)';
    else if (k === 'DATABASE_URL' || k === 'DATABASE_DIRECT_URL' || k === 'NATS_URL')
      shown = printable(v).split(',').map(maskUrlPassword).join(',');
    else if ((SECRET_VARIABLES as readonly string[]).includes(k))
      shown = Array.isArray(v)
        ? v.map((t) => `${(t as { label?: string }).label ?? ''}:****`).join(',')
        : maskSecret(printable(v));
    else if (Array.isArray(v)) shown = v.join(',') || '(all)';
    else if (v && typeof v === 'object' && 'count' in v && 'windowMs' in v)
      shown = `${(v as { count: number }).count}/${(v as { windowMs: number }).windowMs}ms`;
    else shown = printable(v);
    return `${k}=${shown}`;
  });
}

/** A configuration value as text: primitives as String() writes them, a list joined with commas. */
function printable(v: unknown): string {
  if (Array.isArray(v)) return v.map(printable).join(',');
  if (
    typeof v === 'string' ||
    typeof v === 'number' ||
    typeof v === 'boolean' ||
    typeof v === 'bigint' ||
    v === null ||
    v === undefined
  )
    return String(v);
  return JSON.stringify(v) ?? '';
}

export function maskSecret(v: string): string {
  if (/^\d+:/.test(v)) return `${v.split(':')[0]}:****`;
  return v.length <= 4 ? '****' : `****${v.slice(-2)}`;
}

function maskUrlPassword(v: string): string {
  try {
    const u = new URL(v);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return '****';
  }
}

/** The bot id is the numeric prefix of the token; in sandbox mode the sandbox token is used. */
export function botIdFromToken(token: string): string {
  return token.split(':')[0];
}
