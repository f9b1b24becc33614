/**
 * The suite's default timeouts, one place for all three runners: vitest
 * (`vitest.config.ts`), the Deno shim (`tests/deno/vitest-shim.ts`) and Bun
 * (`scripts/test-bun.sh` passes `--timeout`).
 *
 * Sized for CI sharing two cores with other work: a test that takes 1 s on a
 * quiet machine can take 5-8 s beside another test run, so the runners'
 * stock 5 s made verdicts depend on load. A default of 30 s still fails a
 * hung test well inside the run; tests that do heavy work (processes,
 * clusters, browsers) keep their own larger timeouts. Nothing here makes a
 * test's verdict depend on speed: a test asserts what happened, never how
 * fast (speed goals are benchmarks under bench/).
 *
 * `tests/repo/suite-load.test.ts` checks the three runners read these values and
 * that every property test runs on a fixed seed.
 */
export const TEST_TIMEOUT_MS = 30_000;
export const HOOK_TIMEOUT_MS = 60_000;
