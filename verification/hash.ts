/**
 * The candidate hash: SHA-256 (Web Crypto) of the canonical JSON of the
 * parsed candidate. The canonical form is common/canonical-json.ts (keys
 * sorted, shortest numbers, no Unicode normalization, so a precomposed "é"
 * and "e" + U+0301 are different candidates).
 */
import { canonicalJson } from "../common/canonical-json.ts";
import { sha256Hex } from "../common/hex.ts";

export { canonicalJson };

/** The candidate hash: SHA-256 of the canonical JSON of the parsed candidate. */
export function candidateHash(candidate: unknown): Promise<string> {
  return sha256Hex(canonicalJson(candidate));
}
