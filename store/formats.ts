/**
 * Storage formats (docs/operations.md, "Upgrades"). Each process announces
 * the formats it reads with its definition set (store/port.ts invariant
 * `definition-sets`); a writer uses a format only when every live process
 * reads it (`mayWrite`). A set announced by a build that predates formats
 * reads `BASE_FORMATS`: the compact snapshot form 1 (store/snapshot-form.ts)
 * and the wire codes 1-31 (store/script/wire.ts), the formats this build
 * writes. A newer format joins `READ_FORMATS` one release before any build
 * writes it.
 */
export const BASE_FORMATS = ["snapshot.1", "wire.1"] as const;

/** The formats this build reads. */
export const READ_FORMATS: readonly string[] = [...BASE_FORMATS];

/** True when every live set (its `formats`, absent: a build before formats) reads `format`. */
export function mayWrite(format: string, live: ReadonlyArray<{ formats?: readonly string[] }>): boolean {
  return live.every((s) => (s.formats ?? BASE_FORMATS).includes(format));
}
