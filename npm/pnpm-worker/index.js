// `@pnpm/worker` under another name: an npm or pnpm override can alias `@pnpm/worker` to this
// package (an alias cannot point at a subpath such as `@cas/native/worker`). A plain
// `module.exports = require(…)` also gives ESM importers the named exports (Node reads them from
// the required module).
module.exports = require('@cas/native/worker')
