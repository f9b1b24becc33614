/**
 * A small synchronous digest of a text: 64 bits as 16 hex digits, from two
 * 32-bit FNV-1a style hashes with different seeds and a final mix
 * (murmur3's fmix32). Not cryptographic: it tells definitions apart
 * (agents/version.ts), where a collision only makes two definitions share a
 * default version. Web APIs only (TextEncoder); synchronous because
 * defineAgent() is.
 */
export function digest64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    a = Math.imul(a ^ bytes[i], 0x01000193);
    b = Math.imul(b ^ bytes[i], 0x5bd1e995);
    b ^= b >>> 15;
  }
  return hex(fmix(a ^ Math.imul(b, 0x9e3779b1))) + hex(fmix(b ^ Math.imul(a, 0x85ebca6b)));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const hex = (n: number): string => n.toString(16).padStart(8, "0");
