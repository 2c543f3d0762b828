#!/usr/bin/env node
// cas-native-explain: whether pnpm's next fresh-clone install of a project would be native, and
// why not. See README.md.
require('./dist/plugin/config-dependency.js').explainCommand(process.argv.slice(2)).then((code) => { process.exitCode = code })
