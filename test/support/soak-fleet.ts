/**
 * The soak's fleet of real `tg-relay` processes (pollers, workers, admin): start, SIGKILL, restart,
 * stop gracefully, and a record of every exit so the soak can tell the processes it killed from the
 * ones that died on their own. Each process's output goes to a log file (and a short tail in memory).
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, cleanEnv, ROOT } from './cli';

export type Role = 'poller' | 'worker' | 'admin';

export interface ExitRecord {
  name: string;
  role: Role;
  pid: number;
  life: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** killed: SIGKILLed by the soak; stopped: SIGTERM at the end; crashed: neither. */
  cause: 'killed' | 'stopped' | 'crashed';
  tail: string;
}

interface Member {
  name: string;
  role: Role;
  life: number;
  child: ChildProcess;
  /** What the soak did to it: undefined while it should be running. */
  intent?: 'kill' | 'stop';
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready: Promise<void>;
  tail: string;
}

const TAIL_CHARS = 8_000;

/** Log lines that say a process is up (its config validated, connected, and working). */
const READY_MARK: Record<Role, RegExp> = {
  poller: /"msg":"ingress starting/,
  worker: /"msg":"worker started/,
  admin: /"msg":"admin API listening"/,
};

export interface FleetOptions {
  /** Environment of each role (merged over LOG_LEVEL=info). */
  env: (role: Role, name: string) => Record<string, string | undefined>;
  /** Where the per-process logs go. */
  logDir: string;
  readyTimeoutMs?: number;
}

export class Fleet {
  private readonly members = new Map<string, Member>();
  private lives = 0;
  readonly exits: ExitRecord[] = [];
  readonly kills: Record<Role, number> = { poller: 0, worker: 0, admin: 0 };

  constructor(private readonly opts: FleetOptions) {
    fs.mkdirSync(opts.logDir, { recursive: true });
  }

  /** Starts (or restarts) `name` as `role`; resolves once it logged that it is up. */
  start(name: string, role: Role): Promise<void> {
    const prev = this.members.get(name);
    if (prev && prev.child.exitCode === null && prev.child.signalCode === null)
      throw new Error(`${name} is still running`);
    const life = ++this.lives;
    const log = fs.createWriteStream(path.join(this.opts.logDir, `${name}.log`), { flags: 'a' });
    log.write(`\n==== ${new Date().toISOString()} ${name} (${role}) life ${life}\n`);
    const child = spawn(process.execPath, [CLI, role], {
      env: cleanEnv({ LOG_LEVEL: 'info', ...this.opts.env(role, name) }),
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const member: Member = { name, role, life, child, tail: '', exited: undefined as never, ready: undefined as never };
    let markSeen = false;
    let onReady!: () => void;
    let onFail!: (err: Error) => void;
    member.ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    member.ready.catch(() => undefined);
    const onData = (d: Buffer) => {
      log.write(d);
      member.tail = (member.tail + d.toString()).slice(-TAIL_CHARS);
      if (!markSeen && READY_MARK[role].test(member.tail)) {
        markSeen = true;
        onReady();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    member.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        log.end(`\n==== exit code=${code} signal=${signal}\n`);
        const cause = member.intent === 'kill' ? 'killed' : member.intent === 'stop' ? 'stopped' : 'crashed';
        this.exits.push({ name, role, pid: child.pid ?? 0, life, code, signal, cause, tail: member.tail });
        onFail(
          new Error(`${name} exited (code ${code}, signal ${signal}) before it was up:\n${member.tail.slice(-2000)}`),
        );
        resolve({ code, signal });
      });
    });
    this.members.set(name, member);
    const timeoutMs = this.opts.readyTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${name} not up within ${timeoutMs} ms:\n${member.tail.slice(-2000)}`)),
        timeoutMs,
      );
    });
    return Promise.race([member.ready, timeout]).finally(() => clearTimeout(timer));
  }

  names(role?: Role): string[] {
    return [...this.members.values()].filter((m) => !role || m.role === role).map((m) => m.name);
  }

  isRunning(name: string): boolean {
    const m = this.members.get(name);
    return !!m && m.child.exitCode === null && m.child.signalCode === null;
  }

  pid(name: string): number | undefined {
    return this.members.get(name)?.child.pid;
  }

  role(name: string): Role {
    const m = this.members.get(name);
    if (!m) throw new Error(`no member ${name}`);
    return m.role;
  }

  /** Waits until every running member logged that it is up. */
  async allReady(): Promise<void> {
    await Promise.all([...this.members.values()].filter((m) => this.isRunning(m.name)).map((m) => m.ready));
  }

  /** SIGKILL, then wait for the exit. */
  async kill(name: string): Promise<void> {
    const m = this.members.get(name);
    if (!m || !this.isRunning(name)) return;
    m.intent = 'kill';
    this.kills[m.role]++;
    m.child.kill('SIGKILL');
    await m.exited;
  }

  /** SIGKILL and start again. */
  async restart(name: string): Promise<void> {
    const role = this.role(name);
    await this.kill(name);
    await this.start(name, role);
  }

  /** Sends `signal` to every running member and waits for them all; returns their exits. */
  async stopAll(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 60_000): Promise<ExitRecord[]> {
    const running = [...this.members.values()].filter((m) => this.isRunning(m.name));
    for (const m of running) {
      m.intent = 'stop';
      m.child.kill(signal);
    }
    const timer = setTimeout(() => {
      for (const m of running) {
        if (!this.isRunning(m.name)) continue;
        // what the stuck process was doing, for the kept logs (a blocked event loop, a syscall, a futex)
        const stuck = path.join(this.opts.logDir, `${m.name}.stuck`);
        fs.appendFileSync(stuck, procSnapshot(m.child.pid));
        // and the JavaScript it runs: /proc says "running" for a loop that never yields, this names the loop
        fs.appendFileSync(stuck, jsStack(m.child.pid));
        m.child.kill('SIGKILL');
      }
    }, timeoutMs);
    await Promise.all(running.map((m) => m.exited));
    clearTimeout(timer);
    const lives = new Set(running.map((m) => m.life));
    return this.exits.filter((e) => lives.has(e.life));
  }

  /** Kills whatever still runs (cleanup after a failure). */
  async killAll(): Promise<void> {
    await Promise.all([...this.members.keys()].map((n) => this.kill(n)));
  }

  /** Exits that were neither a SIGKILL of the soak nor the final stop. */
  crashes(): ExitRecord[] {
    return this.exits.filter((e) => e.cause === 'crashed');
  }
}

/** Linux /proc view of a process: each thread's state, wait channel and current syscall, and its open files. */
function procSnapshot(pid: number | undefined): string {
  const read = (f: string) => {
    try {
      return fs.readFileSync(f, 'utf8').trim();
    } catch (err) {
      return `(${(err as Error).message})`;
    }
  };
  try {
    const lines = [`==== ${new Date().toISOString()} pid ${pid} ignored the stop signal`];
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      const dir = `/proc/${pid}/task/${t}`;
      lines.push(
        `thread ${t} ${read(`${dir}/comm`)} state=${read(`${dir}/stat`).split(' ')[2]} wchan=${read(`${dir}/wchan`)} syscall=${read(`${dir}/syscall`)}`,
      );
    }
    const link = (fd: string) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '?';
      }
    };
    const fds = fs.readdirSync(`/proc/${pid}/fd`).map((fd) => `${fd}->${link(fd)}`);
    lines.push(`fds ${fds.join(' ')}`);
    return `${lines.join('\n')}\n`;
  } catch (err) {
    return `pid ${pid}: no /proc snapshot (${(err as Error).message})\n`;
  }
}

/** The JavaScript call stacks of a running Node process, sampled through its inspector (test/support/js-stack.js). */
function jsStack(pid: number | undefined): string {
  if (!pid) return '';
  const r = spawnSync(
    process.execPath,
    ['--experimental-websocket', path.join(__dirname, 'js-stack.js'), String(pid)],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  return `${r.stdout ?? ''}${r.error ? `js-stack: ${r.error.message}\n` : ''}`;
}
