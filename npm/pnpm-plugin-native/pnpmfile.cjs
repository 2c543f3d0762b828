// @cas/pnpm-plugin-native: pnpm loads this file from the config dependency before it installs
// anything. See README.md.
module.exports = require('./dist/plugin/config-dependency.js').load()
