import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    globalSetup: ['__test__/helpers/temp-root.ts'],
    // The oracle runs pnpm's worker pool and real stores on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
})
