import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { COMMANDS } from '../../../apps/cli/main';
import { parseDuration } from '../../../libs/config';

const ROOT = path.resolve(__dirname, '../../..');
const compose = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
const services: Record<string, any> = compose.services;
const relayServices = Object.entries(services).filter(([, s]) => s.image === 'tg-relay:local' && s.command?.[0] !== 'migrate');

function replicas(s: any): number {
  return s.deploy?.replicas ?? 1;
}

describe('docker-compose.yml', () => {
  it('runs postgres, a one-shot migrate, 2 pollers, 3 workers and the admin API', () => {
    const byCommand: Record<string, number> = {};
    for (const [, s] of Object.entries(services)) {
      const cmd = s.command?.[0] ?? (s.image?.startsWith('postgres') ? 'postgres' : '?');
      byCommand[cmd] = (byCommand[cmd] ?? 0) + replicas(s);
    }
    expect(byCommand).toEqual({ postgres: 1, migrate: 1, poller: 2, worker: 3, admin: 1 });
    for (const [, s] of relayServices) expect(Object.keys(COMMANDS)).toContain(s.command[0]);
  });

  it('gives postgres a volume and a healthcheck, and makes migrate a one-shot after it', () => {
    expect(services.postgres.volumes).toEqual(expect.arrayContaining([expect.stringMatching(/^pgdata:\/var\/lib\/postgresql\/data$/)]));
    expect(compose.volumes).toHaveProperty('pgdata');
    expect(services.postgres.healthcheck.test.join(' ')).toContain('pg_isready');
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

  it('exposes the admin API on 8080 with a readiness healthcheck and a required token', () => {
    const admin = services.admin;
    expect(admin.ports).toContain('8080:8080');
    expect(admin.environment.ADMIN_HOST).toBe('0.0.0.0');
    expect(admin.environment.ADMIN_TOKEN).toContain('ADMIN_TOKEN');
    expect(admin.healthcheck.test.join(' ')).toContain('/health/ready');
  });

  it('builds every service from one multi-stage Dockerfile whose entrypoint is the CLI', () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "bin\/tg-relay.js"\]/);
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(\S+)/gm)) {
      expect([m[1], fs.existsSync(path.join(ROOT, m[1]))]).toEqual([m[1], true]);
    }
    for (const [, s] of [...relayServices, ['migrate', services.migrate] as const]) expect(s.build).toBe('.');
  });
});
