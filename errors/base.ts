/**
 * The base of every error class gatehouse throws: `GatehouseError`, an
 * `Error` with a stable `code` string (snake_case, never reworded between
 * versions). `err instanceof GatehouseError` tells gatehouse's own errors
 * from any other; `err.code` says which one without string-matching the
 * message. Each subclass keeps its own `name` and properties.
 *
 * Every error class of the package extends it (tests/docs/public-face.test.ts
 * checks that no other class extends `Error` directly).
 * @module
 */

/** An error gatehouse throws: `code` is stable, `message` is for people. */
export class GatehouseError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = "GatehouseError";
  }
}
