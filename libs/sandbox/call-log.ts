/** The record of Bot API calls (bounded ring) and the counters behind `stats()`. */
import type { CallRecord, SandboxStats } from './types';

export class CallLog {
  private records: CallRecord[] = [];
  private seq = 0;
  private counters: SandboxStats = emptyStats();

  constructor(
    private readonly maxRecords: number,
    private readonly onCall?: (record: CallRecord) => void,
  ) {}

  add(record: Omit<CallRecord, 'seq'>): CallRecord {
    const full: CallRecord = { seq: ++this.seq, ...record };
    this.records.push(full);
    if (this.records.length > this.maxRecords) this.records = this.records.slice(-Math.floor(this.maxRecords * 0.9));
    const s = this.counters;
    s.calls++;
    s.by_method[record.method] = (s.by_method[record.method] ?? 0) + 1;
    if (record.outcome === 'server_error') s.faults.server_error++;
    if (record.outcome === 'dropped_before') s.faults.drop_before++;
    if (record.outcome === 'dropped_after') s.faults.drop_after++;
    this.onCall?.(full);
    return full;
  }

  countRateLimited(): void {
    this.counters.rate_limited++;
  }

  countWebhook(ok: boolean): void {
    if (ok) this.counters.webhook.delivered++;
    else this.counters.webhook.failed++;
  }

  list(filter: { botId?: number; method?: string } = {}): CallRecord[] {
    const method = filter.method?.toLowerCase();
    return this.records.filter(
      (r) =>
        (filter.botId === undefined || r.bot_id === filter.botId) &&
        (method === undefined || r.method.toLowerCase() === method),
    );
  }

  stats(): SandboxStats {
    return JSON.parse(JSON.stringify(this.counters)) as SandboxStats;
  }

  reset(): void {
    this.records = [];
    this.seq = 0;
    this.counters = emptyStats();
  }
}

function emptyStats(): SandboxStats {
  return {
    calls: 0,
    by_method: {},
    rate_limited: 0,
    faults: { server_error: 0, drop_before: 0, drop_after: 0 },
    webhook: { delivered: 0, failed: 0 },
  };
}
