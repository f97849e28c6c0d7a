#!/usr/bin/env node
'use strict';
// The installed CLI runs the compiled JavaScript in dist/ (`npm run build`; `npm start` builds first
// when dist/ is missing or stale). Development and the tests run the sources: scripts/tg-relay-dev.js.
let cli;
try {
  // first: a SIGTERM while the CLI loads must not kill the process before it can drain
  require('../dist/libs/lifecycle/early-signals.js').holdEarlySignals();
  cli = require('../dist/apps/cli/main.js');
} catch (err) {
  if (
    err &&
    err.code === 'MODULE_NOT_FOUND' &&
    /dist\/(apps\/cli\/main|libs\/lifecycle\/early-signals)\.js/.test(String(err.message))
  ) {
    process.stderr.write(
      'tg-relay: not built yet (no dist/): run "npm run build" first, or "npm start", which builds when needed\n',
    );
    process.exit(1);
  }
  throw err;
}
cli.main(process.argv.slice(2));
