// Preloaded into the worker processes the tests spawn (NODE_OPTIONS=--require, set by stack.ts): adds the
// test tools (the chaos env, the armed stall fault) to an unchanged `starpo worker`.
require('tsx/cjs/api').register();
require('./test_tools.ts');
