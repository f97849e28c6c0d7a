#!/usr/bin/env node
'use strict';
// Development entry: `tg-relay` from the TypeScript sources through tsx, no build needed. The tests
// spawn it (test/support/cli.ts), so a source change is tested without `npm run build`; the
// shipped bin (bin/tg-relay.js) runs dist/ only.
require('tsx/cjs');
// first: a SIGTERM while the sources load must not kill the process before it can drain
require('../libs/lifecycle/early-signals.ts').holdEarlySignals();
require('../apps/cli/main.ts').main(process.argv.slice(2));
