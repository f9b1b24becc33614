/**
 * Tolerant keys, at validation only. A required key is satisfied by the same
 * key in another case or separator style: one normalisation
 * (common/tool-registry.ts `methodForm`) turns `userId`, `UserId`,
 * `user-id`, `USER_ID` and `user_id` into `user_id`, and two keys match when
 * their forms are equal. An exact spelling always wins over a tolerant one.
 *
 * Invariant: nothing here writes to the value it reads; a caller that needs
 * to validate a value "as if" spelt canonically gets a separate view
 * (`canonicalView`), and the payload the model or a consumer sees is the
 * original.
 */
import { methodForm } from "../common/tool-registry.ts";

export { methodForm as keyForm };

/** The key of `obj` that satisfies `expected`: itself, or one with the same form; null when none. */
export function findKey(obj: Record<string, unknown>, expected: string): string | null {
  if (Object.hasOwn(obj, expected)) return expected;
  const form = methodForm(expected);
  for (const k of Object.keys(obj)) if (methodForm(k) === form) return k;
  return null;
}

/**
 * A shallow copy of `obj` in which every expected key that is present only
 * in another spelling is also present under the expected spelling (for a
 * schema validator). The original is not touched.
 */
export function canonicalView(obj: Record<string, unknown>, expected: readonly string[]): Record<string, unknown> {
  const view: Record<string, unknown> = { ...obj };
  for (const e of expected) {
    if (Object.hasOwn(obj, e)) continue;
    const k = findKey(obj, e);
    if (k !== null) view[e] = obj[k];
  }
  return view;
}
