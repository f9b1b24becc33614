/**
 * Model cost as people read it. Costs are sums of products of token counts
 * and prices per million tokens, so binary floating point leaves noise in
 * the last digits (`0.00028700000000000004`). Every cost the runtime
 * computes or adds up goes through `roundCost`, which keeps 12 significant
 * digits: more than any provider's price list carries (prices are quoted to
 * at most 6 digits per million tokens), fewer than the 15-17 where the
 * noise sits. It is a pure function of its input, so replaying a log adds
 * up to the same totals.
 */
export const COST_DIGITS = 12;

/** `x` with at most 12 significant digits; non-finite input is returned as is. */
export function roundCost(x: number): number {
  return Number.isFinite(x) && x !== 0 ? Number(x.toPrecision(COST_DIGITS)) : x;
}
