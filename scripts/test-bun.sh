#!/usr/bin/env bash
# The core suites under Bun: `npm run test:bun [-- bun test options]`.
#
# The suites are the ones deno.json's test.include lists (one list for both
# runtimes), run by `bun test` as they are: Bun maps `import ... from
# "vitest"` to its own runner, so no shim is needed. One file is left out:
# tests/deno/shim.test.ts pins vitest's hook semantics for the Deno shim, and
# Bun's runner differs there on purpose-built cases (it runs a suite's
# afterEach/afterAll hooks in registration order, not in reverse, ignores
# teardown functions returned by beforeEach/beforeAll, and words assertion
# messages its own way). The core suites rely on none of these.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

EXCLUDE=("tests/deno/shim.test.ts")
# Run in a Bun process of their own, after the others (bun test runs every
# file of one call in one process). tests/store-redis-cluster-failover.test.ts
# ended twice in CI with every task done but fewer tool runs than calls when
# it ran after the other suites in one Bun process (2026-11-28, never on its
# own, under Node or under Deno); until that is explained it runs alone.
ISOLATED=("tests/store-redis-cluster-failover.test.ts")

mapfile -t PATTERNS < <(node -e 'for (const p of JSON.parse(require("fs").readFileSync("deno.json", "utf8")).test.include) console.log(p)')
FILES=()
for pattern in "${PATTERNS[@]}"; do
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    skip=0
    for x in "${EXCLUDE[@]}" "${ISOLATED[@]}"; do [ "$f" = "$x" ] && skip=1; done
    [ "$skip" = 1 ] || FILES+=("./$f")
  done < <(compgen -G "$pattern" | sort)
done
if [ "${#FILES[@]}" = 0 ]; then echo "no test files match deno.json's test.include" >&2; exit 1; fi

# The suite's default test timeout (tests/timeouts.ts), unless one is given.
TIMEOUT_ARGS=()
if [[ " $* " != *" --timeout"* ]]; then
  TIMEOUT_MS="$(sed -n 's/^export const TEST_TIMEOUT_MS = \([0-9_]*\);.*/\1/p' tests/timeouts.ts | tr -d _)"
  [ -n "$TIMEOUT_MS" ] || { echo "tests/timeouts.ts has no TEST_TIMEOUT_MS" >&2; exit 1; }
  TIMEOUT_ARGS=(--timeout "$TIMEOUT_MS")
fi

# The isolated files' own runs: a `--reporter-outfile=<path>` given becomes
# `<path>.<n>.xml` for the n-th (.ci/run counts every such file).
RC=0
./node_modules/.bin/bun test "${TIMEOUT_ARGS[@]}" "$@" "${FILES[@]}" || RC=$?
n=0
for f in "${ISOLATED[@]}"; do
  n=$((n + 1))
  ARGS=()
  for a in "$@"; do
    case "$a" in
      --reporter-outfile=*) ARGS+=("$a.$n.xml") ;;
      *) ARGS+=("$a") ;;
    esac
  done
  ./node_modules/.bin/bun test "${TIMEOUT_ARGS[@]}" "${ARGS[@]}" "./$f" || RC=$?
done
exit "$RC"
