/**
 * Runs `task` over `items`, at most `limit` at a time, in order, until one fails: its failure
 * (a reason), or `undefined` when every one succeeded. Tasks not yet started then never start.
 */
export async function firstFailure<T> (items: readonly T[], limit: number, task: (item: T) => Promise<string | undefined>): Promise<string | undefined> {
  // No worker would run, and nothing failing would read as everything passing.
  if (!(Number.isInteger(limit) && limit >= 1)) throw Object.assign(new RangeError(`limit must be a positive integer, got ${limit}`), { code: 'ERR_OUT_OF_RANGE' })
  let next = 0
  let failed: string | undefined
  const worker = async (): Promise<void> => {
    while (failed == null && next < items.length) {
      const why = await task(items[next++])
      if (why != null) failed ??= why
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return failed
}
