import { roundCost } from "../common/cost.ts";

/** Prices per million tokens, and the cost of one call from its usage. */
export interface Pricing {
  inputPerMTok: number;
  outputPerMTok: number;
}

export function isPricing(p: unknown): p is Pricing {
  const ok = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  return !!p && typeof p === "object" && ok((p as Pricing).inputPerMTok) && ok((p as Pricing).outputPerMTok);
}

/** The cost of one call, without float noise (common/cost.ts). */
export function costOf(usage: { inputTokens: number; outputTokens: number }, pricing: Pricing): number {
  return roundCost((usage.inputTokens * pricing.inputPerMTok + usage.outputTokens * pricing.outputPerMTok) / 1_000_000);
}
