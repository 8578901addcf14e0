// summary.mjs RESULTS.json [PACKAGE_DIR] [--failed]: counts the results
// of the HTTP caching test suite (npm http-cache-tests) as its site
// classifies them, and lists every required test not passed; --failed
// prints only the ids of the required tests that failed (fail, setup
// or harness failure; not those whose dependency failed), one a line. lbd's own script; it uses the
// suite's classification (lib/display.mjs) so the counts match its site.
import fs from 'fs'
import path from 'path'

const args = process.argv.slice(2).filter(a => a !== '--failed')
const onlyFailed = process.argv.includes('--failed')
const [file, pkg = path.resolve('node_modules/http-cache-tests')] = args
const { determineTestResult, testLookup } = await import(path.join(pkg, 'lib/display.mjs'))
const { default: tests } = await import(path.join(pkg, 'tests/index.mjs'))
const { default: surrogate } = await import(path.join(pkg, 'tests/surrogate-control.mjs'))
tests.push(surrogate)
const results = JSON.parse(fs.readFileSync(file, 'utf8'))

// The suite's result types by their symbol (lib/display.mjs resultTypes).
const names = { '-': 'untested', '✅': 'pass', '⛔️': 'fail', '⚠️': 'optional_fail', Y: 'yes', N: 'no', '🔹': 'setup_fail', '⁉️': 'harness_fail', '⚪️': 'dependency_fail', '↻': 'retry' }
const counts = {}
const failed = []
const failedIds = []
for (const suite of tests) {
  for (const test of suite.tests) {
    const r = determineTestResult(tests, test.id, results)
    const name = names[r[2]]
    const kind = test.kind || 'required'
    const key = `${kind} ${name}`
    counts[key] = (counts[key] || 0) + 1
    if (kind === 'required' && name !== 'pass' && name !== 'untested') {
      const detail = results[test.id] === undefined ? '' : (results[test.id][1] || '')
      if (['fail', 'setup_fail', 'harness_fail'].includes(name)) failedIds.push(test.id)
      failed.push(`${test.id} [${name}] ${testLookup(tests, test.id).name} — ${detail}`)
    }
  }
}
if (onlyFailed) {
  for (const id of failedIds) console.log(id)
  process.exit(0)
}
console.log(JSON.stringify(counts, null, 1))
console.log(`required tests not passed: ${failed.length}`)
for (const f of failed) console.log('  ' + f)
