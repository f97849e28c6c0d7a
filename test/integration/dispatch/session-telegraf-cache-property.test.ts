/**
 * Property: telegraf's own session() middleware over the transactional store, in one process (one
 * telegraf cache), however the steps of concurrent attempts of one key interleave — entering the
 * middleware (its read or its joining of the cached object), changing the session (in place or by
 * reassigning), finishing (telegraf's write in `finally`, also after a failure) and committing —
 * loses no increment and applies none twice. A conflicting attempt starts over, as the engine does.
 */
import fc from 'fast-check';
import { session, type Context, type MiddlewareFn } from 'telegraf';
import { withTransaction } from '../../../libs/db';
import { sessionStore } from '../../../libs/dispatch';
import { AttemptWork } from '../../../libs/dispatch/attempt-work';
import { dispatchStorage, type DispatchState } from '../../../libs/dispatch/context';
import { watchAccessors } from '../../../libs/dispatch/session-holders';
import { hasCode } from '../../../libs/errors';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_sess_tgcp');
});
afterAll(async () => {
  await db?.drop();
});

type Counter = { count: number };
type Step = 'enter' | 'touch' | 'finish' | 'commit' | 'done';

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

class Attempt {
  step: Step = 'enter';
  private work!: AttemptWork;
  private touchGate = gate();
  private finishGate = gate();
  private reached!: Promise<unknown>;
  private result!: Promise<boolean>;
  private failNext: boolean;

  constructor(
    private readonly mw: MiddlewareFn<Context>,
    private readonly reassign: boolean,
    fails: boolean,
  ) {
    this.failNext = fails;
  }

  /** Runs the attempt's next step and waits until it reached the one after (or ended). */
  async advance(): Promise<void> {
    if (this.step === 'enter') {
      this.work = new AttemptWork({ pool: db.pool, botId: 'p', sessionTtlMs: 60_000 });
      this.touchGate = gate();
      this.finishGate = gate();
      const entered = gate();
      const ctx = watchAccessors({ update: { update_id: 1 } } as unknown as Context, () => this.work);
      const fail = this.failNext;
      this.result = dispatchStorage.run({ work: this.work } as unknown as DispatchState, () =>
        Promise.resolve(
          this.mw(ctx, async () => {
            entered.open();
            await this.touchGate.wait;
            const c = ctx as unknown as { session: Counter };
            if (this.reassign) c.session = { count: c.session.count + 1 };
            else c.session.count++;
            await this.finishGate.wait;
            if (fail) throw new Error('fails after its change');
          }),
        ).then(
          () => true,
          () => false,
        ),
      );
      this.reached = Promise.race([entered.wait, this.result]);
      await this.reached;
      this.step = 'touch';
    } else if (this.step === 'touch') {
      this.touchGate.open();
      await new Promise((r) => setImmediate(r));
      this.step = 'finish';
    } else if (this.step === 'finish') {
      this.finishGate.open();
      const ok = await this.result;
      if (ok) this.step = 'commit';
      else this.restart(); // a failed attempt: its writes are discarded, the update runs again
    } else if (this.step === 'commit') {
      try {
        await withTransaction(db.pool, (c) => this.work.commit(c));
        this.work.close();
        this.step = 'done';
      } catch (err) {
        if (!hasCode(err, 'RELAY_SESSION_CONFLICT')) throw err;
        this.restart();
      }
    }
  }

  private restart(): void {
    this.work.discard();
    this.failNext = false;
    this.step = 'enter';
  }
}

it("telegraf's session() cache: interleaved attempts of one key never lose or double an increment", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ reassign: fc.boolean(), fails: fc.boolean() }), { minLength: 1, maxLength: 5 }),
      fc.array(fc.nat({ max: 4 }), { maxLength: 40 }),
      fc.boolean(),
      async (specs, schedule, existing) => {
        await db.pool.query('truncate relay.sessions');
        if (existing) await sessionStore({ pool: db.pool, botId: 'p' }).set('u', { count: 0 });
        const mw = session<Counter, Context>({
          store: sessionStore<Counter>(),
          defaultSession: () => ({ count: 0 }),
          getSessionKey: () => 'u',
        });
        const attempts = specs.map((s) => new Attempt(mw, s.reassign, s.fails));
        for (const pick of schedule) {
          const live = attempts.filter((a) => a.step !== 'done');
          if (live.length === 0) break;
          await live[pick % live.length].advance();
        }
        // then the most advanced attempt goes first, so those in flight end (or start over) and the
        // rest run one at a time: each then lands
        const rank: Step[] = ['enter', 'touch', 'finish', 'commit'];
        for (let guard = 0; guard < 1_000; guard++) {
          const live = attempts.filter((a) => a.step !== 'done');
          if (live.length === 0) break;
          live.sort((x, y) => rank.indexOf(y.step) - rank.indexOf(x.step));
          await live[0].advance();
        }
        const { rows } = await db.pool.query<{ value: Counter }>(`select value from relay.sessions where key = 'u'`);
        expect(rows[0]?.value).toEqual({ count: specs.length });
      },
    ),
    { numRuns: 60 },
  );
});
