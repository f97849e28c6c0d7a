/**
 * How a fleet worker's claim is shared between its bots (the claim variant's `fairBy`): the bots
 * with a free slot, the first one rotating claim by claim, each allowed what its per-bot cap leaves.
 * The claim statement reads `keys` then `limits` once per claim; `claimed` and `finished` keep the
 * count of each bot's jobs in flight in this process.
 */
import type { ClaimStore } from './job-kind';
import type { Param } from './claim-sql';

export interface FairClaims {
  /** The claim variant's `fairBy` over `column`. */
  fairBy(column: string): (p: Param) => { column: string; keys: string; limits: string };
  /**
   * Counts the claimed jobs of `store` in flight, by the key `keyOf` reads from a claimed row; the
   * store's `servedBots` become the keys.
   */
  count<Row, E>(store: ClaimStore<Row, E>, keyOf: (row: Row) => string): ClaimStore<Row, E>;
  /** A job of `key` finished its attempt. */
  finished(key: string): void;
}

export function createFairClaims(opts: { keys: () => readonly string[]; perKey: number }): FairClaims {
  const inFlight = new Map<string, number>();
  let turn = 0;
  let limits: number[] = [];
  const plan = (): string[] => {
    const all = opts.keys();
    const start = all.length ? turn++ % all.length : 0;
    const keys: string[] = [];
    limits = [];
    for (let i = 0; i < all.length; i++) {
      const key = all[(start + i) % all.length];
      const free = opts.perKey - (inFlight.get(key) ?? 0);
      if (free <= 0) continue;
      keys.push(key);
      limits.push(free);
    }
    return keys;
  };
  return {
    fairBy: (column) => (p) => ({ column, keys: p(plan), limits: p(() => limits) }),
    count(store, keyOf) {
      store.servedBots = opts.keys;
      const claim = store.claim.bind(store);
      store.claim = async (db, args) => {
        const jobs = await claim(db, args);
        for (const j of jobs) inFlight.set(keyOf(j.row), (inFlight.get(keyOf(j.row)) ?? 0) + 1);
        return jobs;
      };
      return store;
    },
    finished(key) {
      const n = (inFlight.get(key) ?? 1) - 1;
      if (n > 0) inFlight.set(key, n);
      else inFlight.delete(key);
    },
  };
}
