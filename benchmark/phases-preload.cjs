// Preloaded into pnpm by benchmark/phases.mjs (`NODE_OPTIONS=--require`): when, in ms from the
// process's start, pnpm required the plugin's pnpmfile, when that returned, when it called and
// when it got back `updateConfig` (the native install), and when the process began to exit,
// appended as one JSON line to $PHASES_FILE. A process with no pnpmfile records its exit only.
'use strict'
const fs = require('node:fs')
const Module = require('node:module')
const { performance } = require('node:perf_hooks')

const marks = {}
const now = () => Math.round(performance.now() * 10) / 10
const load = Module._load
Module._load = function (request, ...rest) {
  if (marks.pnpmfile != null || !/pnpm-plugin-native[\\/]pnpmfile\.cjs$/.test(request)) return load.call(this, request, ...rest)
  marks.pnpmfile = now()
  const exported = load.call(this, request, ...rest)
  marks.loaded = now()
  const updateConfig = exported?.hooks?.updateConfig
  if (typeof updateConfig === 'function') {
    exported.hooks.updateConfig = async function (...args) {
      marks.updateConfig = now()
      try {
        return await updateConfig.apply(this, args)
      } finally {
        marks.updated = now()
      }
    }
  }
  return exported
}
process.on('exit', () => {
  marks.exit = now()
  fs.appendFileSync(process.env.PHASES_FILE, JSON.stringify(marks) + '\n')
})
