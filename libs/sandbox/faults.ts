/**
 * Runtime fault injection for Bot API calls: a global configuration and per-bot overrides (a bot's
 * own configuration replaces the global one entirely). Decisions use the seedable RNG.
 */
import type { FaultConfig, FaultKind } from './types';
import type { Rng } from './rng';

export interface FaultDecision {
  kind: FaultKind;
  latencyMs: number;
  serverErrorStatus: number;
}

const NO_FAULT: FaultDecision = { kind: 'none', latencyMs: 0, serverErrorStatus: 502 };

export const SERVER_ERROR_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function validateFaults(f: FaultConfig): FaultConfig {
  for (const key of ['serverErrorRate', 'dropBeforeRate', 'dropAfterRate'] as const) {
    const v = f[key];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && v <= 1)) {
      throw new Error(`faults.${key} must be a number between 0 and 1`);
    }
  }
  if (f.serverErrorStatus !== undefined && !(f.serverErrorStatus >= 500 && f.serverErrorStatus <= 599)) {
    throw new Error('faults.serverErrorStatus must be a 5xx status');
  }
  if (f.latencyMs !== undefined && !(f.latencyMs >= 0)) throw new Error('faults.latencyMs must be >= 0');
  const kinds: FaultKind[] = [
    'server_error',
    'drop_before',
    'drop_after',
    'html_ok',
    'html_error',
    'truncated',
    'none',
  ];
  for (const k of f.sequence ?? []) if (!kinds.includes(k)) throw new Error(`unknown fault kind "${k}"`);
  return {
    ...f,
    methods: f.methods?.map((m) => m.toLowerCase()),
    sequence: f.sequence ? [...f.sequence] : undefined,
  };
}

export class FaultInjector {
  private global: FaultConfig | null = null;
  private readonly perBot = new Map<number, FaultConfig>();

  constructor(private readonly rng: Rng) {}

  /** `null` clears. With a bot id, sets (or clears) that bot's override. */
  set(faults: FaultConfig | null, botId?: number): void {
    const cfg = faults ? validateFaults(faults) : null;
    if (botId === undefined) this.global = cfg;
    else if (cfg) this.perBot.set(botId, cfg);
    else this.perBot.delete(botId);
  }

  get(botId?: number): FaultConfig | null {
    if (botId !== undefined && this.perBot.has(botId)) return this.perBot.get(botId) ?? null;
    return this.global;
  }

  reset(): void {
    this.global = null;
    this.perBot.clear();
  }

  decide(botId: number, method: string): FaultDecision {
    const cfg = this.perBot.get(botId) ?? this.global;
    if (!cfg) return NO_FAULT;
    if (cfg.methods && cfg.methods.length > 0 && !cfg.methods.includes(method.toLowerCase())) return NO_FAULT;
    const base = { latencyMs: cfg.latencyMs ?? 0, serverErrorStatus: cfg.serverErrorStatus ?? 502 };
    if (cfg.sequence && cfg.sequence.length > 0) return { ...base, kind: cfg.sequence.shift() as FaultKind };
    if (cfg.dropBeforeRate && this.rng() < cfg.dropBeforeRate) return { ...base, kind: 'drop_before' };
    if (cfg.serverErrorRate && this.rng() < cfg.serverErrorRate) return { ...base, kind: 'server_error' };
    if (cfg.dropAfterRate && this.rng() < cfg.dropAfterRate) return { ...base, kind: 'drop_after' };
    return { ...base, kind: 'none' };
  }
}
