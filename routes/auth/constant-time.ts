/**
 * Constant-time comparison with Web APIs only. Secrets are compared as
 * SHA-256 digests (equal lengths whatever the inputs' lengths) with an XOR
 * accumulator and no early exit, so timing tells nothing about how much of a
 * secret matched.
 */
export async function sha256(data: string | Uint8Array): Promise<Uint8Array> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
}

/** Constant-time equality of two byte arrays (the length difference is folded in, never an early exit). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}
