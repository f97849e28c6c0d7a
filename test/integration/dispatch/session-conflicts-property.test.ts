/**
 * Property: however the reads and commits of concurrent attempts interleave, optimistic session
 * writes lose no update and apply none twice. Each attempt increments one of a few keys; an attempt
 * whose commit conflicts (RELAY_SESSION_CONFLICT) starts over with a fresh read, as the engine does.
 * In the end every key's count equals the number of attempts on it, and its version the number of
 * commits that landed.
 */
import fc from 'fast-check';
import { withTransaction } from '../../../libs/db';
import { AttemptWork } from '../../../libs/dispatch/attempt-work';
import { dispatchStorage, type DispatchState } from '../../../libs/dispatch/context';
import { hasCode } from '../../../libs/errors';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_sess_prop');
});
afterAll(async () => {
  await db?.drop();
});

type Counter = { count: number };

/** One attempt: a fresh AttemptWork per try, its steps run inside its own dispatch context. */
class Attempt {
  private work!: AttemptWork;
  private step: 'read' | 'commit' | 'done' = 'read';
  conflicts = 0;
  constructor(readonly key: string) {
    this.restart();
  }
  private restart() {
    this.work = new AttemptWork({ pool: db.pool, botId: 'p', sessionTtlMs: 60_000 });
    this.step = 'read';
  }
  get done() {
    return this.step === 'done';
  }
  private inContext<T>(fn: () => Promise<T>): Promise<T> {
    return dispatchStorage.run({ work: this.work } as unknown as DispatchState, fn);
  }
  /** Its next step: read and increment, or commit (a conflict sends it back to reading). */
  async advance(): Promise<void> {
    if (this.step === 'read') {
      await this.inContext(async () => {
        const s = this.work.sessions;
        const v = ((await s.get(this.key)) as Counter | undefined) ?? { count: 0 };
        await s.set(this.key, { count: v.count + 1 });
      });
      this.step = 'commit';
    } else if (this.step === 'commit') {
      try {
        await withTransaction(db.pool, (c) => this.work.commit(c));
        this.work.close();
        this.step = 'done';
      } catch (err) {
        if (!hasCode(err, 'RELAY_SESSION_CONFLICT')) throw err;
        this.conflicts++;
        this.work.discard();
        this.restart();
      }
    }
  }
}

it('interleaved reads and commits of attempts on shared keys never lose or double an increment', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat({ max: 5 }), { maxLength: 40 }),
      async (keys, schedule) => {
        await db.pool.query('truncate relay.sessions');
        const attempts = keys.map((k) => new Attempt(k));
        for (const pick of schedule) {
          const live = attempts.filter((a) => !a.done);
          if (live.length === 0) break;
          await live[pick % live.length].advance();
        }
        // whatever is left runs one after another (no more interleaving: each lands)
        for (const a of attempts) while (!a.done) await a.advance();
        const { rows } = await db.pool.query<{ key: string; value: Counter; version: string }>(
          `select key, value, version::text from relay.sessions where bot_id = 'p' order by key`,
        );
        const expected = [...new Set(keys)].sort().map((k) => {
          const n = keys.filter((x) => x === k).length;
          return { key: k, value: { count: n }, version: String(n) };
        });
        expect(rows).toEqual(expected);
      },
    ),
    { numRuns: 60 },
  );
});
