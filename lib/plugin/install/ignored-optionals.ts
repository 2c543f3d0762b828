/**
 * `ignoredOptionalDependencies`: optional dependencies pnpm drops from every manifest it reads
 * (`hooks/read-package-hook/src/createOptionalDependenciesRemover.ts`, the last of its
 * read-package hooks, after the overrides). pnpm resolved without them, so the lockfile has none
 * of them; a frozen install checks each project's importer against its manifest as that hook
 * leaves it, and reports that manifest.
 */
import { createMatcher } from '@pnpm/config.matcher'

type Deps = Record<string, string>

/**
 * `manifest` without the optional dependencies whose names `patterns` match (pnpm's own
 * matcher), from `dependencies` too where one is listed in both; `manifest` itself when none is.
 */
export function withoutIgnoredOptionals (manifest: Record<string, unknown>, patterns: string[] | undefined): Record<string, unknown> {
  const optional = manifest.optionalDependencies as Deps | undefined
  if (patterns == null || patterns.length === 0 || optional == null) return manifest
  const ignored = Object.keys(optional).filter(createMatcher(patterns))
  if (ignored.length === 0) return manifest
  const drop = (deps: Deps | undefined): Deps | undefined => deps == null ? deps : Object.fromEntries(Object.entries(deps).filter(([name]) => !ignored.includes(name)))
  const result: Record<string, unknown> = { ...manifest, optionalDependencies: drop(optional) }
  if (manifest.dependencies != null) result.dependencies = drop(manifest.dependencies as Deps)
  return result
}
