/** Lowercase hex of bytes, and the digests and random ids built on it (Web Crypto only). */

export function toHex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `n` random bytes as `2n` hex characters. */
export function randomHex(n: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(n)));
}

async function digestHex(algorithm: "SHA-1" | "SHA-256", text: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest(algorithm, new TextEncoder().encode(text))));
}

/** SHA-256 of a text's UTF-8 bytes, lowercase hex. */
export function sha256Hex(text: string): Promise<string> {
  return digestHex("SHA-256", text);
}

/** SHA-1 of a text's UTF-8 bytes, lowercase hex (Redis script ids). */
export function sha1Hex(text: string): Promise<string> {
  return digestHex("SHA-1", text);
}
