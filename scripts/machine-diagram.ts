/**
 * What ties the committed diagram (`docs/machine.mmd`, `docs/machine.svg`,
 * `docs/machine.png`) to the statechart: the SHA-256 of the Mermaid text,
 * written by scripts/render-machine.ts into the SVG (`data-source-sha256` on
 * the root element) and the PNG (a `tEXt` chunk `source-sha256`), and checked
 * by tests/machines/machine-diagram.test.ts against the current `toMermaid()` output,
 * so a diagram that no longer matches the machine fails the suite.
 * Web APIs only (Web Crypto, Uint8Array).
 */
import { sha256Hex } from "../common/hex.ts";
import { describeMachine, toMermaid } from "../inspect.ts";

export const DIAGRAM_FILES = { mermaid: "docs/machine.mmd", svg: "docs/machine.svg", png: "docs/machine.png" } as const;
export const HASH_KEY = "source-sha256";

/** The Mermaid text of the agent statechart, as `GET /v1/machine` serves it. */
export const machineMermaid = (): string => toMermaid(describeMachine());

export { sha256Hex };

/** Marks the root `<svg>` element with the source hash. */
export function stampSvg(svg: string, hash: string): string {
  if (!svg.startsWith("<svg")) throw new Error("Expected the SVG text to start with <svg");
  return svg.replace(/^<svg/, `<svg data-${HASH_KEY}="${hash}"`);
}

export function svgStamp(svg: string): string | null {
  return new RegExp(`^<svg[^>]*\\sdata-${HASH_KEY}="([0-9a-f]{64})"`).exec(svg)?.[1] ?? null;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const PNG_SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];
const latin1 = (s: string) => Uint8Array.from(s, (ch) => ch.charCodeAt(0));

function chunks(png: Uint8Array): Array<{ type: string; start: number; data: Uint8Array }> {
  if (!PNG_SIGNATURE.every((b, i) => png[i] === b)) throw new Error("Not a PNG file");
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const out: Array<{ type: string; start: number; data: Uint8Array }> = [];
  for (let at = 8; at + 12 <= png.length;) {
    const len = view.getUint32(at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    out.push({ type, start: at, data: png.subarray(at + 8, at + 8 + len) });
    at += 12 + len;
  }
  return out;
}

/** Inserts a `tEXt` chunk with the source hash right after `IHDR`. */
export function stampPng(png: Uint8Array, hash: string): Uint8Array {
  const [ihdr] = chunks(png);
  if (ihdr?.type !== "IHDR") throw new Error("PNG without IHDR");
  const data = latin1(`${HASH_KEY}\0${hash}`);
  const chunk = new Uint8Array(12 + data.length);
  const view = new DataView(chunk.buffer);
  view.setUint32(0, data.length);
  chunk.set(latin1("tEXt"), 4);
  chunk.set(data, 8);
  view.setUint32(8 + data.length, crc32(chunk.subarray(4, 8 + data.length)));
  const cut = ihdr.start + 12 + ihdr.data.length;
  const out = new Uint8Array(png.length + chunk.length);
  out.set(png.subarray(0, cut), 0);
  out.set(chunk, cut);
  out.set(png.subarray(cut), cut + chunk.length);
  return out;
}

/** The source hash of a PNG written by `stampPng`, checking the chunk's CRC. */
export function pngStamp(png: Uint8Array): string | null {
  for (const c of chunks(png)) {
    if (c.type !== "tEXt") continue;
    const text = String.fromCharCode(...c.data);
    const [key, value] = text.split("\0");
    if (key !== HASH_KEY) continue;
    const stored = new DataView(png.buffer, png.byteOffset).getUint32(c.start + 8 + c.data.length);
    if (stored !== crc32(png.subarray(c.start + 4, c.start + 8 + c.data.length))) return null;
    return value;
  }
  return null;
}
