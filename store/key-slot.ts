/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial
 * value 0) of the key's hash tag, modulo 16 384. The hash tag is the text
 * between the first `{` and the next `}` when that text is not empty;
 * otherwise the whole key is hashed. store/keys.ts uses it to place shards;
 * Web APIs only (TextEncoder).
 */

/** The number of slots of a Redis Cluster. */
export const SLOTS = 16_384;

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

const utf8 = new TextEncoder();

/** CRC16-XMODEM of the UTF-8 bytes of `text`. */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of utf8.encode(text)) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

/** The part of `key` Redis hashes: the first non-empty `{...}`, else the whole key. */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open < 0) return key;
  const close = key.indexOf("}", open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The slot Redis Cluster stores `key` in (what `CLUSTER KEYSLOT key` answers). */
export function keySlot(key: string): number {
  return crc16(hashTag(key)) % SLOTS;
}
