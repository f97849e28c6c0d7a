#!/usr/bin/env node
'use strict';
// Development entry: `tg-relay` from the TypeScript sources through tsx, no build needed. The tests
// spawn it (test/support/cli.ts), so a source change is tested without `npm run build`; the
// shipped bin (bin/tg-relay.js) runs dist/ only.
require('tsx/cjs');
require('../apps/cli/main.ts').main(process.argv.slice(2));
