/**
 * Unknown keys of a definition object are refused, never ignored: a misspelt
 * option (`maxStepPerTurn`, `retrySafee`, `budgets`) would otherwise leave
 * the definition running without what it was meant to declare. Every
 * definition-time object (createGatehouse's options, defineAgent, defineTool,
 * agentTool, an agent's `output`, `retention`, `memory` and `budget`) is
 * checked against its list of keys here, and the error suggests the key that
 * was probably meant: one that differs only in case or by at most two edits.
 */
import { DefinitionError } from "../errors/errors.ts";

/** Edit distance of two short strings (for "did you mean"). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/**
 * The known key `key` was probably meant to be: same letters in another
 * case, else the nearest within `maxEdits` edits (default two).
 */
export function closestKey(key: string, known: readonly string[], maxEdits = 2): string | undefined {
  const lower = key.toLowerCase();
  const sameCase = known.find((k) => k.toLowerCase() === lower);
  if (sameCase) return sameCase;
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  for (const k of known) {
    const d = editDistance(k, key);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** The first key of `value` not in `known`, or null. */
export function firstUnknownKey(value: object, known: readonly string[]): string | null {
  for (const k of Object.keys(value)) if (!known.includes(k)) return k;
  return null;
}

/** The sentence for an unknown key: `unknown key "k" (did you mean "m"?); it takes a, b, c`. */
export function unknownKeyMessage(key: string, known: readonly string[], suggestion = closestKey(key, known)): string {
  return `unknown key "${key}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; it takes ${known.join(", ")}`;
}

/**
 * Throws a `DefinitionError` for the first key of `value` not in `known`:
 * the message is `<where>: <path> has an unknown key ...` and `key` is the
 * path of the key (`<path>.<key>`, or the key alone when `path` is empty).
 * `also` are further keys accepted without being suggested or listed (the
 * fields a definition adds, so a definition can be spread into a new one).
 */
export function refuseUnknownKeys(value: object, known: readonly string[], where: string, path = "", also: readonly string[] = []): void {
  const k = firstUnknownKey(value, [...known, ...also]);
  if (k === null) return;
  throw new DefinitionError(`${where}: ${path ? `${path} has an ` : ""}${unknownKeyMessage(k, known)}`, {
    key: path ? `${path}.${k}` : k,
  });
}
