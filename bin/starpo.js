#!/usr/bin/env node
// Entry point of the `starpo` command: TypeScript sources run through tsx (no build step).
require('tsx/cjs/api').register();
require('../src/cli/main.ts');
