/**
 * SIGTERM/SIGINT before a command has installed its shutdown handler. Loading the CLI takes about
 * a second (more from the sources); without a handler Node's default action kills the process, so
 * an orchestrator's early stop (a rollout cancelled right after the start) would skip the drain.
 * The entry scripts hold such signals from their first line; `onShutdownSignal` takes the held one
 * and drains as for any signal; a command without a drain gets it back with the default action.
 */
const SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
let held: NodeJS.Signals | undefined;
let holding = false;

function hold(signal: NodeJS.Signals): void {
  // a second signal before any drain began: the impatient operator's forced exit, as in a drain
  if (held) process.exit(1);
  held = signal;
}

export function holdEarlySignals(): void {
  if (holding) return;
  holding = true;
  for (const s of SIGNALS) process.on(s, hold);
}

/** Stops holding; returns the signal that arrived meanwhile, if any (taken: not raised again). */
export function takeEarlySignal(): NodeJS.Signals | undefined {
  if (!holding) return undefined;
  holding = false;
  for (const s of SIGNALS) process.off(s, hold);
  const s = held;
  held = undefined;
  return s;
}

/**
 * Stops holding and lets a held signal do what it would have done (for commands that do not drain).
 * After one turn of the event loop: a signal that came while the process was busy loading is still
 * in libuv's pipe, and would be dropped with the listeners.
 */
export async function releaseEarlySignal(): Promise<void> {
  await new Promise((r) => setImmediate(r));
  const s = takeEarlySignal();
  if (s) process.kill(process.pid, s);
}
