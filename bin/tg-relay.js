#!/usr/bin/env node
'use strict';
// The installed CLI runs the compiled JavaScript in dist/ (`npm run build`; `npm start` builds first
// when dist/ is missing or stale). Development and the tests run the sources: scripts/tg-relay-dev.js.
let cli;
try {
  cli = require('../dist/apps/cli/main.js');
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/apps/cli/main.js')) {
    process.stderr.write(
      'tg-relay: not built yet (no dist/): run "npm run build" first, or "npm start", which builds when needed\n',
    );
    process.exit(1);
  }
  throw err;
}
cli.main(process.argv.slice(2));
