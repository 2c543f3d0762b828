// The TypeScript layer, its tests, benchmarks and scripts in neostandard's style (standard's
// rules for modern JS and TypeScript, stylistic rules included, so `eslint --fix` is also the
// formatter): the style the code was written in, checked by CI.
import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    noJsx: true,
    // What git ignores (builds, caches, tools fetched by scripts), the generated napi loader, fixtures.
    ignores: [...resolveIgnoresFromGitignore(), 'index.js', 'index.d.ts', 'fuzz/**', '__test__/fixtures/**'],
  }),
  {
    rules: {
      // Long lines are common here (tables of cases, messages kept whole for grep).
      '@stylistic/max-len': 'off',
      // Trailing commas in multi-line literals, as the code has them.
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      // `void promise` marks a promise deliberately not awaited (its errors are handled inside).
      'no-void': ['error', { allowAsStatement: true }],
    },
  },
]
