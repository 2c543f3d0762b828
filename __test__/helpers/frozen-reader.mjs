/**
 * Child process of the frozen-store test, started as an unprivileged user when the test runs as
 * root: reads every key of a read-only store with `frozenStore`, then once without it.
 *
 * argv: storeDir key…
 */
import cas from '../../dist/index.js'

const [storeDir, ...keys] = process.argv.slice(2)
const frozen = await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: true, frozenStore: true }, keys)
const writable = await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: true }, keys)
  .then(() => null, (err) => err.code)
process.send({
  verified: frozen.results.map((r) => r.verified),
  errors: frozen.results.filter((r) => r.error != null).map((r) => r.error.message),
  writableOpenError: writable,
})
cas.closeStores()
