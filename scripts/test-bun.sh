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

mapfile -t PATTERNS < <(node -e 'for (const p of JSON.parse(require("fs").readFileSync("deno.json", "utf8")).test.include) console.log(p)')
FILES=()
for pattern in "${PATTERNS[@]}"; do
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    skip=0
    for x in "${EXCLUDE[@]}"; do [ "$f" = "$x" ] && skip=1; done
    [ "$skip" = 1 ] || FILES+=("./$f")
  done < <(compgen -G "$pattern" | sort)
done
if [ "${#FILES[@]}" = 0 ]; then echo "no test files match deno.json's test.include" >&2; exit 1; fi

# The suite's default test timeout (tests/helpers/timeouts.ts), unless one is given.
TIMEOUT_ARGS=()
if [[ " $* " != *" --timeout"* ]]; then
  TIMEOUT_MS="$(sed -n 's/^export const TEST_TIMEOUT_MS = \([0-9_]*\);.*/\1/p' tests/helpers/timeouts.ts | tr -d _)"
  [ -n "$TIMEOUT_MS" ] || { echo "tests/helpers/timeouts.ts has no TEST_TIMEOUT_MS" >&2; exit 1; }
  TIMEOUT_ARGS=(--timeout "$TIMEOUT_MS")
fi

exec ./node_modules/.bin/bun test "${TIMEOUT_ARGS[@]}" "$@" "${FILES[@]}"
