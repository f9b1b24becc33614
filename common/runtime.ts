/**
 * What the core asks of the runtime it runs on, asked in one place.
 *
 * Core modules use Web APIs only (tests/deno/core-web-apis.test.ts); where
 * they must behave differently on Cloudflare Workers they ask `onWorkers()`,
 * the one reader of `navigator.userAgent` (tests/docs/public-face.test.ts checks
 * that no other file reads it).
 * @module
 */

/** True inside workerd (Cloudflare Workers, Miniflare): the user agent the runtime reports. */
export function onWorkers(): boolean {
  return (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers";
}
