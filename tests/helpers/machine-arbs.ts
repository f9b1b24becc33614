/** fast-check arbitraries shared by the machine's property tests. */
import fc from "fast-check";
import type { TurnConfig } from "../../machines/types.ts";

/** A turn's config, small enough that budgets and attempts run out within a short sequence. */
export const turnConfigArb: fc.Arbitrary<TurnConfig> = fc.record({
  maxSteps: fc.integer({ min: 1, max: 4 }),
  completion: fc.constantFrom("agent_output" as const, "submit_result" as const),
  mustEndWith: fc.constantFrom([], ["finish"], ["agent_output"]),
  verifyMaxAttempts: fc.integer({ min: 1, max: 3 }),
  maxVerifierErrors: fc.integer({ min: 1, max: 3 }),
});
