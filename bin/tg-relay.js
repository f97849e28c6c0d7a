#!/usr/bin/env node
'use strict';
// Runs the TypeScript sources directly (no build step at run time): tsx registers a CommonJS loader.
require('tsx/cjs');
require('../apps/cli/main.ts').main(process.argv.slice(2));
