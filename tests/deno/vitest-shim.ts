/**
 * The subset of vitest's test API that the test files use, on top of
 * `Deno.test`, so the same files run unchanged under `deno test` (deno.json
 * maps the bare specifier "vitest" to this file).
 *
 * Contract:
 * - `describe` nests; its callback runs synchronously while the file loads
 *   (as in vitest). Each `it`/`test` becomes one `Deno.test` named
 *   "outer > inner > test", registered in source order.
 * - `it(name, fn, timeout?)`, `it(name, fn, { timeout })` and
 *   `it(name, { timeout }, fn)`; `describe(name, { timeout }, fn)` sets the
 *   default for the tests inside; otherwise the suite's defaults apply
 *   (tests/helpers/timeouts.ts, as in vitest.config.ts). A test that does not settle in time fails.
 * - Hooks run in vitest's default order ("stack"): `beforeAll` of a suite
 *   before its first test, `beforeEach` outermost first, `afterEach`
 *   innermost first and in reverse registration order, `afterAll` of a suite
 *   after its last test (also when that test failed). Functions returned by
 *   `beforeEach`/`beforeAll` run after the afterEach/afterAll hooks, last
 *   returned first. If a `beforeAll` throws, every test of that suite fails
 *   with its error.
 * - `it.each`/`test.each`/`describe.each` take an array of cases (arrays are
 *   spread into the arguments) and format titles with %s %d %i %f %j %o %#
 *   and `$name` for object cases.
 * - `expect` is vitest's own matcher set (`@vitest/expect` on chai), so
 *   messages and semantics match the vitest run; `expect.assertions(n)`,
 *   `expect.hasAssertions()` and un-awaited `resolves`/`rejects` are checked
 *   when the test ends.
 * - Tests share process-wide resources across hooks (servers, pools), so
 *   Deno's op and resource sanitizers are off; the exit sanitizer stays on.
 */
import * as chai from "chai";
import {
  ASYMMETRIC_MATCHERS_OBJECT,
  customMatchers,
  type ExpectStatic,
  GLOBAL_EXPECT,
  getState,
  JestAsymmetricMatchers,
  JestChaiExpect,
  JestExtend,
  type MatcherState,
  setState,
} from "@vitest/expect";
import { HOOK_TIMEOUT_MS, TEST_TIMEOUT_MS } from "../helpers/timeouts.ts";

// ---------------------------------------------------------------- Deno.test

interface DenoTestDefinition {
  name: string;
  fn: () => Promise<void>;
  sanitizeOps?: boolean;
  sanitizeResources?: boolean;
  sanitizeExit?: boolean;
}
interface DenoTestApi {
  test(def: DenoTestDefinition): void;
}

// Typed access without a global `Deno` declaration, so `tsc` (Node types)
// also accepts this file.
function denoApi(): DenoTestApi {
  const d = (globalThis as unknown as { Deno?: DenoTestApi }).Deno;
  if (!d || typeof d.test !== "function") {
    throw new Error("tests/deno/vitest-shim.ts runs only under `deno test`; under Node import from vitest itself");
  }
  return d;
}

// ---------------------------------------------------------------- expect

chai.use(JestExtend);
chai.use(JestChaiExpect);
chai.use(JestAsymmetricMatchers);

/** Per-test record that `@vitest/expect` uses for un-awaited async assertions. */
interface TestRecord {
  name: string;
  promises?: Promise<unknown>[];
  onFinished?: (() => unknown)[];
}

/**
 * `@vitest/expect` pushes each `resolves`/`rejects` promise here and removes
 * it once settled, so a failed un-awaited assertion would leave the list
 * before the test ends and surface as an unhandled rejection (which makes
 * Deno abandon the rest of the file). Every pushed promise gets a handler at
 * once and its failure is kept for the end of the test.
 */
class TrackedPromises extends Array<Promise<unknown>> {
  static all = new WeakMap<object, { pending: Promise<unknown>[]; failures: unknown[] }>();
  override push(...ps: Promise<unknown>[]): number {
    let t = TrackedPromises.all.get(this);
    if (!t) TrackedPromises.all.set(this, (t = { pending: [], failures: [] }));
    const track = t;
    for (const p of ps) track.pending.push(p.then(() => undefined, (e: unknown) => void track.failures.push(e)));
    return super.push(...ps);
  }
}

let currentTest: TestRecord | undefined;

type ExpectFn = ExpectStatic & {
  assertions(n: number): void;
  hasAssertions(): void;
  unreachable(message?: string): never;
};

function createExpect(): ExpectFn {
  const expectFn = ((value: unknown, message?: string) => {
    const { assertionCalls } = getState(expectFn);
    setState({ assertionCalls: assertionCalls + 1 }, expectFn);
    const assertion = chai.expect(value, message) as unknown as { withTest(t: TestRecord): unknown };
    return currentTest ? assertion.withTest(currentTest) : assertion;
  }) as unknown as ExpectFn;
  Object.assign(expectFn, chai.expect);
  Object.assign(expectFn, (globalThis as Record<symbol, unknown>)[ASYMMETRIC_MATCHERS_OBJECT]);
  expectFn.getState = () => getState(expectFn);
  expectFn.setState = (state: Partial<MatcherState>) => setState(state, expectFn);
  setState(freshState(undefined), expectFn);
  expectFn.extend = (matchers) => (chai.expect as unknown as { extend(e: unknown, m: unknown): void }).extend(expectFn, matchers);
  expectFn.unreachable = (message?: string): never => {
    chai.assert.fail(`expected${message ? ` "${message}" ` : " "}not to be reached`);
    throw new Error("unreachable");
  };
  expectFn.assertions = (expected: number) => {
    const errorGen = () => new Error(`expected number of assertions to be ${expected}, but got ${getState(expectFn).assertionCalls}`);
    setState({ expectedAssertionsNumber: expected, expectedAssertionsNumberErrorGen: errorGen }, expectFn);
  };
  expectFn.hasAssertions = () => {
    setState({ isExpectingAssertions: true, isExpectingAssertionsError: new Error("expected any number of assertion, but got none") }, expectFn);
  };
  expectFn.extend(customMatchers);
  return expectFn;
}

function freshState(testName: string | undefined): Partial<MatcherState> {
  return {
    assertionCalls: 0,
    isExpectingAssertions: false,
    isExpectingAssertionsError: null,
    expectedAssertionsNumber: null,
    expectedAssertionsNumberErrorGen: null,
    currentTestName: testName,
  } as Partial<MatcherState>;
}

export const expect: ExpectFn = createExpect();
Object.defineProperty(globalThis, GLOBAL_EXPECT, { value: expect, writable: true, configurable: true });

/** Vitest's end-of-test assertion-count checks. */
function checkAssertionCounts(): void {
  const s = getState(expect) as MatcherState & {
    expectedAssertionsNumberErrorGen: (() => Error) | null;
    isExpectingAssertionsError: Error | null;
  };
  if (s.expectedAssertionsNumber !== null && s.expectedAssertionsNumber !== s.assertionCalls && s.expectedAssertionsNumberErrorGen) {
    throw s.expectedAssertionsNumberErrorGen();
  }
  if (s.isExpectingAssertions && s.assertionCalls === 0 && s.isExpectingAssertionsError) {
    throw s.isExpectingAssertionsError;
  }
}

// ---------------------------------------------------------------- suites

type Awaitable<T> = T | Promise<T>;
type Teardown = () => Awaitable<unknown>;
type HookFn = () => Awaitable<unknown>;
export interface TestContext {
  expect: ExpectFn;
  task: { name: string };
  /** Aborted when the test times out. */
  signal: AbortSignal;
  onTestFinished(fn: () => Awaitable<unknown>): void;
}
type TestFn = (ctx: TestContext) => Awaitable<unknown>;
type TestOptions = { timeout?: number };

interface Hook {
  fn: HookFn;
  timeout: number;
}

interface Suite {
  name: string;
  parent: Suite | undefined;
  beforeAll: Hook[];
  afterAll: Hook[];
  beforeEach: Hook[];
  afterEach: Hook[];
  /** Every test registered inside this suite or its children, in order. */
  tests: TestEntry[];
  /** Set once beforeAll has run; holds its failure if it threw. */
  started: { error: unknown } | undefined;
  finished: boolean;
  /** Teardowns returned by beforeAll hooks, run with afterAll. */
  allTeardowns: Teardown[];
  /** Default timeout of the tests inside (`describe(name, { timeout }, fn)`). */
  timeout: number | undefined;
}

interface TestEntry {
  fullName: string;
  suites: Suite[]; // outermost (file root) first
}

const DEFAULT_TEST_TIMEOUT = TEST_TIMEOUT_MS;
const DEFAULT_HOOK_TIMEOUT = HOOK_TIMEOUT_MS;

function newSuite(name: string, parent: Suite | undefined): Suite {
  return { name, parent, beforeAll: [], afterAll: [], beforeEach: [], afterEach: [], tests: [], started: undefined, finished: false, allTeardowns: [], timeout: undefined };
}

/**
 * Top-level hooks and tests belong to the root suite. `deno test` runs each
 * test module in its own isolate, so this root (like all module state here)
 * is per test file.
 */
const root: Suite = newSuite("", undefined);
let current: Suite | undefined;

function activeSuite(): Suite {
  return current ?? root;
}

function chain(suite: Suite): Suite[] {
  const out: Suite[] = [];
  for (let s: Suite | undefined = suite; s; s = s.parent) out.unshift(s);
  return out;
}

function withTimeout<T>(what: string, ms: number, run: (signal: AbortSignal) => Awaitable<T>): Promise<T> {
  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new Error(`${what} timed out in ${ms}ms`));
    }, ms);
  });
  return Promise.race([Promise.resolve().then(() => run(ac.signal)), timeout]).finally(() => clearTimeout(timer));
}

async function runHook(kind: string, hook: Hook): Promise<unknown> {
  return await withTimeout(`${kind} hook`, hook.timeout, () => hook.fn());
}

function parseTestArgs(a: unknown, b: unknown): { fn: TestFn; timeout: number } {
  const fallback = activeSuite().timeout ?? DEFAULT_TEST_TIMEOUT;
  if (typeof a === "function") {
    const t = typeof b === "number" ? b : (b as TestOptions | undefined)?.timeout;
    return { fn: a as TestFn, timeout: t ?? fallback };
  }
  if (typeof b === "function") {
    const t = typeof a === "number" ? a : (a as TestOptions | undefined)?.timeout;
    return { fn: b as TestFn, timeout: t ?? fallback };
  }
  throw new TypeError("it/test needs a test function");
}

function registerTest(name: string, fn: TestFn, timeout: number): void {
  const suite = activeSuite();
  const suites = chain(suite);
  const fullName = [...suites.map((s) => s.name).filter((n) => n !== ""), name].join(" > ");
  const entry: TestEntry = { fullName, suites };
  for (const s of suites) s.tests.push(entry);
  denoApi().test({
    name: fullName,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: () => runTest(entry, name, fn, timeout),
  });
}

async function runTest(entry: TestEntry, name: string, fn: TestFn, timeout: number): Promise<void> {
  const errors: unknown[] = [];
  const promises = new TrackedPromises();
  const record: TestRecord = { name: entry.fullName, promises };
  const finished: (() => Awaitable<unknown>)[] = [];
  const eachTeardowns: Teardown[] = [];
  try {
    // beforeAll, outermost first; a suite's failure sticks to all its tests.
    for (const s of entry.suites) {
      if (!s.started) {
        s.started = { error: undefined };
        try {
          for (const h of s.beforeAll) {
            const r = await runHook("beforeAll", h);
            if (typeof r === "function") s.allTeardowns.push(r as Teardown);
          }
        } catch (e) {
          s.started.error = e;
        }
      }
      if (s.started.error !== undefined) throw s.started.error;
    }
    setState(freshState(entry.fullName), expect);
    currentTest = record;
    try {
      for (const s of entry.suites) {
        for (const h of s.beforeEach) {
          const r = await runHook("beforeEach", h);
          if (typeof r === "function") eachTeardowns.unshift(r as Teardown);
        }
      }
      await withTimeout(`Test "${entry.fullName}"`, timeout, (signal) =>
        fn({ expect, task: { name }, signal, onTestFinished: (f) => void finished.push(f) }));
      const tracked = TrackedPromises.all.get(promises);
      if (tracked) {
        await Promise.all(tracked.pending);
        if (tracked.failures.length > 0) throw tracked.failures[0];
      }
      checkAssertionCounts();
    } catch (e) {
      errors.push(e);
    } finally {
      for (const f of record.onFinished ?? []) {
        try { await f(); } catch (e) { errors.push(e); }
      }
      for (const f of finished.reverse()) {
        try { await f(); } catch (e) { errors.push(e); }
      }
      for (const s of [...entry.suites].reverse()) {
        for (const h of [...s.afterEach].reverse()) {
          try { await runHook("afterEach", h); } catch (e) { errors.push(e); }
        }
      }
      for (const t of eachTeardowns) {
        try { await t(); } catch (e) { errors.push(e); }
      }
      currentTest = undefined;
    }
  } catch (e) {
    errors.push(e);
  } finally {
    // afterAll of every suite whose last test this is, innermost first.
    for (const s of [...entry.suites].reverse()) {
      if (s.finished || s.tests[s.tests.length - 1] !== entry) continue;
      s.finished = true;
      if (!s.started) continue;
      for (const h of [...s.afterAll].reverse()) {
        try { await runHook("afterAll", h); } catch (e) { errors.push(e); }
      }
      for (const t of [...s.allTeardowns].reverse()) {
        try { await t(); } catch (e) { errors.push(e); }
      }
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} errors in "${entry.fullName}": ${errors.map(String).join("; ")}`);
}

// ---------------------------------------------------------------- API

function formatTitle(template: string, args: unknown[], index: number): string {
  let i = 0;
  let out = template.replace(/%[sdifjoO%#]/g, (m) => {
    if (m === "%%") return "%";
    if (m === "%#") return String(index);
    const v = args[i++];
    if (m === "%d" || m === "%i") return String(Math.trunc(Number(v)));
    if (m === "%f") return String(Number(v));
    if (m === "%j" || m === "%o" || m === "%O") return JSON.stringify(v);
    return typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  });
  const obj = args.length === 1 ? args[0] : undefined;
  if (obj && typeof obj === "object") {
    out = out.replace(/\$([A-Za-z_][\w.]*)/g, (m, path: string) => {
      let v: unknown = obj;
      for (const k of path.split(".")) v = v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined;
      return v === undefined ? m : typeof v === "string" ? v : JSON.stringify(v);
    });
  }
  return out;
}

function eachArgs(row: unknown): unknown[] {
  return Array.isArray(row) ? row : [row];
}

type EachTest = <T>(cases: readonly T[]) => (name: string, fn: (...args: T extends readonly unknown[] ? T : [T]) => Awaitable<unknown>, timeout?: number) => void;

interface TestApi {
  (name: string, fn: TestFn, timeoutOrOptions?: number | TestOptions): void;
  (name: string, options: TestOptions, fn: TestFn): void;
  each: EachTest;
}

const testImpl = ((name: string, a: unknown, b?: unknown) => {
  const { fn, timeout } = parseTestArgs(a, b);
  registerTest(name, fn, timeout);
}) as TestApi;
testImpl.each = (cases) => (name, fn, timeout) => {
  cases.forEach((row, i) => {
    const args = eachArgs(row);
    registerTest(formatTitle(name, args, i), () => (fn as (...a: unknown[]) => Awaitable<unknown>)(...args), timeout ?? activeSuite().timeout ?? DEFAULT_TEST_TIMEOUT);
  });
};

export const it: TestApi = testImpl;
export const test: TestApi = testImpl;

interface DescribeApi {
  (name: string, fn: () => void): void;
  /** `{ timeout }` becomes the default timeout of the tests inside. */
  (name: string, options: TestOptions, fn: () => void): void;
  each: <T>(cases: readonly T[]) => (name: string, fn: (...args: T extends readonly unknown[] ? T : [T]) => void) => void;
}

function runDescribe(name: string, fn: () => void, timeout?: number): void {
  const parent = activeSuite();
  const suite = newSuite(name, parent);
  suite.timeout = timeout ?? parent.timeout;
  const prev = current;
  current = suite;
  try {
    const r = fn() as unknown;
    if (r && typeof (r as Promise<unknown>).then === "function") {
      throw new Error(`describe("${name}") callback must be synchronous`);
    }
  } finally {
    current = prev;
  }
}

const describeImpl = ((name: string, a: unknown, b?: unknown) => {
  const fn = typeof a === "function" ? a : b;
  if (typeof fn !== "function") throw new TypeError(`describe("${name}") needs a callback`);
  const options = typeof a === "object" && a !== null ? (a as TestOptions) : undefined;
  runDescribe(name, fn as () => void, options?.timeout);
}) as DescribeApi;
describeImpl.each = (cases) => (name, fn) => {
  cases.forEach((row, i) => {
    const args = eachArgs(row);
    runDescribe(formatTitle(name, args, i), () => (fn as (...a: unknown[]) => void)(...args));
  });
};
export const describe: DescribeApi = describeImpl;

export function beforeAll(fn: HookFn, timeout = DEFAULT_HOOK_TIMEOUT): void {
  activeSuite().beforeAll.push({ fn, timeout });
}
export function afterAll(fn: HookFn, timeout = DEFAULT_HOOK_TIMEOUT): void {
  activeSuite().afterAll.push({ fn, timeout });
}
export function beforeEach(fn: HookFn, timeout = DEFAULT_HOOK_TIMEOUT): void {
  activeSuite().beforeEach.push({ fn, timeout });
}
export function afterEach(fn: HookFn, timeout = DEFAULT_HOOK_TIMEOUT): void {
  activeSuite().afterEach.push({ fn, timeout });
}
