/**
 * `npm run soak` — the crash and fault soak at full size (test/support/soak-run.ts):
 * 2 pollers, 3 workers and the admin API as real processes against the Bot API sandbox (10% faults,
 * Telegram's limits) and a collector failing 20%; 20,000 user updates over 50 chats and 3,000
 * outbound messages; a random poller or worker SIGKILLed and restarted every few seconds; one
 * PostgreSQL restart. Prints the figures and exits 1 if any invariant failed.
 *
 * Sizes: flags `--updates 20000 --chats 50 --outbound 3000 --feed 120s --workers 3 --pollers 2
 * --pg-restarts 1 --seed N --keep` or the same as SOAK_UPDATES, SOAK_CHATS, SOAK_OUTBOUND, SOAK_FEED,
 * SOAK_WORKERS, SOAK_POLLERS, SOAK_PG_RESTARTS, SOAK_SEED, SOAK_KEEP=1; `--short` starts from the
 * size the test suite runs. Uses its own embedded PostgreSQL (in a temp directory, or --dir), or the
 * server at DATABASE_URL (a database soak_<random> is created there), which it restarts with
 * SOAK_PG_RESTART_CMD or, for a local Debian/Ubuntu cluster, pg_ctlcluster (test/support/soak-postgres.ts).
 *
 * Variants: by default the plain soak, then the poison one (the same chaos while 20% of the
 * users send hostile text and one handler call in 25 replies invalid content); `--poison` (or
 * `npm run soak:poison`, SOAK_VARIANT=poison) runs only the poison one, `--plain` (SOAK_VARIANT=plain)
 * only the plain one. `--hostile-share 0.2 --poison-every 25` (SOAK_HOSTILE_SHARE, SOAK_POISON_EVERY)
 * set the poison shares. Exits 1 if any invariant of any variant failed.
 */
import { parseDuration } from '../libs/config/duration';
import { formatReport } from '../test/support/soak-checks';
import { FULL_SOAK, newSeed, runSoak, SHORT_POISON_SOAK, SHORT_SOAK, SoakOptions } from '../test/support/soak-run';
import { POISON_DEFAULTS } from '../test/fixtures/soak-poison';

/** The full poison soak's drain bound (its sends are paced by Telegram's global rate). */
const FULL_POISON_DRAIN_MS = 600_000;

function flags(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}"`);
    const [k, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
    if (inline !== undefined) out.set(k, inline);
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) out.set(k, argv[++i]);
    else out.set(k, 'true');
  }
  return out;
}

async function main(): Promise<number> {
  const f = flags(process.argv.slice(2));
  const get = (flag: string, env: string) => f.get(flag) ?? process.env[env];
  const int = (flag: string, env: string, d: number) => {
    const v = get(flag, env);
    if (v === undefined) return d;
    if (!/^\d+$/.test(v)) throw new Error(`--${flag} / ${env}: expected a non-negative integer, got "${v}"`);
    return Number(v);
  };
  const variant = f.has('poison') ? 'poison' : f.has('plain') ? 'plain' : (process.env.SOAK_VARIANT ?? 'both');
  if (!['plain', 'poison', 'both'].includes(variant))
    throw new Error(`SOAK_VARIANT: expected plain, poison or both, got "${variant}"`);
  const poisonOnly = variant === 'poison';
  const base = f.has('short') ? (poisonOnly ? SHORT_POISON_SOAK : SHORT_SOAK) : FULL_SOAK;
  const share = get('hostile-share', 'SOAK_HOSTILE_SHARE');
  const hostileUserShare = share === undefined ? POISON_DEFAULTS.hostileUserShare : Number(share);
  if (!(hostileUserShare > 0 && hostileUserShare <= 1))
    throw new Error(`--hostile-share / SOAK_HOSTILE_SHARE: expected a share in (0, 1], got "${share}"`);
  const feed = get('feed', 'SOAK_FEED');
  const feedMs = feed === undefined ? base.feedMs : parseDuration(feed);
  if (feedMs === undefined) throw new Error(`--feed / SOAK_FEED: expected a duration like 90s, got "${feed}"`);
  const options: SoakOptions = {
    ...base,
    updates: int('updates', 'SOAK_UPDATES', base.updates),
    chats: int('chats', 'SOAK_CHATS', base.chats),
    outbound: int('outbound', 'SOAK_OUTBOUND', base.outbound),
    workers: int('workers', 'SOAK_WORKERS', base.workers),
    pollers: int('pollers', 'SOAK_POLLERS', base.pollers),
    pgRestarts: int('pg-restarts', 'SOAK_PG_RESTARTS', base.pgRestarts),
    minKills: int('min-kills', 'SOAK_MIN_KILLS', base.minKills),
    feedMs,
    seed: int('seed', 'SOAK_SEED', newSeed()),
    keepData: f.has('keep') || process.env.SOAK_KEEP === '1',
    dir: get('dir', 'SOAK_DIR'),
    databaseUrl: process.env.DATABASE_URL || undefined,
    pgRestartCommand: process.env.SOAK_PG_RESTART_CMD || undefined,
    hostileUserShare,
    poisonReplyEvery: int('poison-every', 'SOAK_POISON_EVERY', POISON_DEFAULTS.poisonReplyEvery),
  };
  const runs: SoakOptions[] = [];
  if (variant !== 'poison') runs.push({ ...options, poison: false });
  // the poison run after a plain one gets a seed of its own (and its own database and directory)
  if (variant !== 'plain')
    runs.push({
      ...options,
      poison: true,
      // its media replies more than double the sends (about 11,600 at full size instead of 5,000), and
      // Telegram's 30 messages a second pace them: the drain measured here sends 25 a second, so 360 s
      // is too short for what is left after the feed
      drainTimeoutMs: f.has('short') ? options.drainTimeoutMs : Math.max(options.drainTimeoutMs, FULL_POISON_DRAIN_MS),
      seed: variant === 'both' ? newSeed() : options.seed,
      dir: variant === 'both' && options.dir ? `${options.dir}-poison` : options.dir,
    });
  let failed = 0;
  for (const o of runs) {
    console.log(
      `soak${o.poison ? ' (poison)' : ''}: ${o.updates} updates over ${o.chats} chats, ${o.outbound} outbound, ${o.pollers} pollers, ${o.workers} workers, admin; ` +
        `Bot API faults ${o.botFaultRate * 100}%, collector failing ${o.collectorFailRate * 100}%, kills every ${o.killEveryMs.join('-')} ms, ${o.pgRestarts} PostgreSQL restart(s)` +
        (o.poison
          ? `; ${Math.round(hostileUserShare * 100)}% of the users send hostile text, one handler call in ${o.poisonReplyEvery} replies invalid content`
          : ''),
    );
    const report = await runSoak(o);
    console.log(formatReport(report));
    if (report.failures.length > 0) failed++;
  }
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`soak: ${(err as Error).stack ?? err}`);
    process.exit(2);
  },
);
