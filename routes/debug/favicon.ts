/**
 * The debugger page's icon, served at `/favicon.ico` (browsers ask for it on
 * every page; without it each visit logs a 404). A 16×16, 32-bit ICO built
 * here from a pixel function (a dark rounded square with a blue dot, the
 * page's colours), so no binary file ships and the bytes are the same on
 * every runtime (Web APIs only).
 *
 * Layout (ICO with one BMP image): ICONDIR (6 bytes), one ICONDIRENTRY
 * (16 bytes), BITMAPINFOHEADER (40 bytes, height doubled for the mask),
 * 16×16 BGRA pixels bottom-up (1024 bytes), the 1-bit AND mask (16 rows of
 * 4 bytes, all zero: the alpha channel decides).
 */
const SIZE = 16;
const DARK = [0x1d, 0x24, 0x30];
const BLUE = [0x2f, 0x6f, 0xde];

/** RGBA of the pixel at (x, y), y down. */
function pixel(x: number, y: number): [number, number, number, number] {
  const r = 3;
  const cx = Math.min(Math.max(x, r), SIZE - 1 - r);
  const cy = Math.min(Math.max(y, r), SIZE - 1 - r);
  if ((x - cx) ** 2 + (y - cy) ** 2 > r * r + 1) return [0, 0, 0, 0];
  const d = (x - 7.5) ** 2 + (y - 7.5) ** 2;
  return d <= 16 ? [BLUE[0], BLUE[1], BLUE[2], 255] : [DARK[0], DARK[1], DARK[2], 255];
}

function buildIco(): Uint8Array {
  const pixels = SIZE * SIZE * 4;
  const mask = SIZE * 4;
  const image = 40 + pixels + mask;
  const bytes = new Uint8Array(6 + 16 + image);
  const v = new DataView(bytes.buffer);
  v.setUint16(2, 1, true); // type: icon
  v.setUint16(4, 1, true); // one image
  v.setUint8(6, SIZE);
  v.setUint8(7, SIZE);
  v.setUint16(10, 1, true); // planes
  v.setUint16(12, 32, true); // bits per pixel
  v.setUint32(14, image, true);
  v.setUint32(18, 22, true); // offset of the image
  v.setUint32(22, 40, true); // BITMAPINFOHEADER size
  v.setInt32(26, SIZE, true);
  v.setInt32(30, SIZE * 2, true);
  v.setUint16(34, 1, true);
  v.setUint16(36, 32, true);
  v.setUint32(42, pixels + mask, true);
  let o = 62;
  for (let y = SIZE - 1; y >= 0; y--) {
    for (let x = 0; x < SIZE; x++) {
      const [r, g, b, a] = pixel(x, y);
      bytes.set([b, g, r, a], o);
      o += 4;
    }
  }
  return bytes;
}

/** The icon's bytes (`image/x-icon`). */
export const FAVICON_ICO: Uint8Array = buildIco();
