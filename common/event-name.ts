/**
 * The name of a named event (`POST /v1/events`, tools/define.ts `waitFor`):
 * 1 to 200 characters of letters, digits and `_ . : / - @ #`. No whitespace
 * and no newline, so a name can sit in a store key and an index member
 * (store/keys.ts `<h>:waits:<name>`).
 */
export const EVENT_NAME = /^[A-Za-z0-9_.:/@#-]{1,200}$/;

export function isEventName(name: unknown): name is string {
  return typeof name === "string" && EVENT_NAME.test(name);
}

/** What a tool's `waitFor` returns for one call. */
export interface EventWait {
  /** The event's name (EVENT_NAME). */
  event: string;
  /** How long the call waits (ms); default: the tool's `timeoutMs`, else the external default (10 min). */
  timeoutMs?: number;
}
