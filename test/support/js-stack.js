#!/usr/bin/env node
'use strict';
/**
 * `node --experimental-websocket test/support/js-stack.js PID [samples]`: prints what the JavaScript
 * of a running Node process is doing, for a process that ignores SIGTERM (Fleet.stopAll writes it
 * into `<name>.stuck` next to the /proc snapshot). SIGUSR1 opens the target's inspector (on its own
 * thread, so a main thread spinning on microtasks still answers), then `Debugger.pause` is sent a
 * few times and each paused call stack printed. The /proc view says "running"; this names the loop.
 * Best effort: an inspector port already taken (9229 by default) or a process blocked in a system
 * call gives "no inspector" / "no pause" lines, never an exception.
 */
const pid = Number(process.argv[2]);
const samples = Number(process.argv[3] || 5);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function targets() {
  for (let i = 0; i < 30; i++) {
    try {
      const res = await fetch('http://127.0.0.1:9229/json/list', { signal: AbortSignal.timeout(1_000) });
      const list = await res.json();
      if (Array.isArray(list) && list.length > 0) return list;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return undefined;
}

async function main() {
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('usage: js-stack.js PID [samples]');
  if (typeof WebSocket !== 'function') {
    console.log('js-stack: no WebSocket (run with node --experimental-websocket)');
    return;
  }
  process.kill(pid, 'SIGUSR1');
  const list = await targets();
  if (!list) {
    console.log(`js-stack: no inspector on 127.0.0.1:9229 for pid ${pid}`);
    return;
  }
  const ws = new WebSocket(list[0].webSocketDebuggerUrl);
  const scripts = new Map();
  let id = 0;
  let taken = 0;
  const send = (method, params = {}) => ws.send(JSON.stringify({ id: ++id, method, params }));
  await new Promise((resolve) => {
    const done = setTimeout(() => {
      console.log(`js-stack: ${taken} of ${samples} samples (no pause: blocked outside JavaScript?)`);
      resolve();
    }, 15_000);
    ws.onerror = () => {
      clearTimeout(done);
      console.log('js-stack: inspector connection failed');
      resolve();
    };
    ws.onmessage = (e) => {
      const m = JSON.parse(String(e.data));
      if (m.method === 'Debugger.scriptParsed') scripts.set(m.params.scriptId, m.params.url);
      // the next pause only once the target runs again (one sent before that is lost)
      if (m.method === 'Debugger.resumed' && taken > 0 && taken < samples)
        setTimeout(() => send('Debugger.pause'), 200);
      if (m.method !== 'Debugger.paused') return;
      const lines = [`-- JavaScript stack, sample ${++taken} of ${samples}`];
      for (const f of m.params.callFrames) {
        const where = scripts.get(f.location.scriptId) || `script ${f.location.scriptId}`;
        lines.push(
          `  at ${f.functionName || '<anonymous>'} ${where}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1}`,
        );
      }
      for (let a = m.params.asyncStackTrace; a; a = a.parent) {
        lines.push(`  -- ${a.description || 'async'}`);
        for (const f of a.callFrames)
          lines.push(`  at ${f.functionName || '<anonymous>'} ${f.url}:${f.lineNumber + 1}`);
      }
      console.log(lines.join('\n'));
      send('Debugger.resume');
      if (taken >= samples) {
        clearTimeout(done);
        resolve();
      }
    };
    ws.onopen = () => {
      send('Debugger.enable');
      send('Debugger.setAsyncCallStackDepth', { maxDepth: 8 });
      setTimeout(() => send('Debugger.pause'), 300);
    };
  });
  ws.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.log(`js-stack: ${err.message}`);
    process.exit(0);
  },
);
