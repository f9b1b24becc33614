/**
 * Auth from environment variables, shared by the entries (Node, Deno, Bun,
 * Workers). Web-only: it reads a plain record.
 *
 * | variable | becomes |
 * | -------- | ------- |
 * | `GATEHOUSE_TOKENS` | tokens: comma-separated full-access tokens, or a JSON array of `{ token, name?, tenants?, verbs? }` (`name`: who acts with it, recorded as `by`) |
 * | `GATEHOUSE_TOKEN` | one more full-access token |
 * | `GATEHOUSE_WEBHOOK_SECRETS` | webhookSecrets: comma-separated `whsec_…`, or a JSON array of `"whsec_…"` and `{ secret, name?, tenants?, verbs? }` |
 * | `QSTASH_CURRENT_SIGNING_KEY` + `QSTASH_NEXT_SIGNING_KEY` | qstash (both or neither) |
 * | `GATEHOUSE_QSTASH_TENANTS` | qstash.tenants: comma-separated agent-id prefixes QStash-signed requests reach |
 * | `GATEHOUSE_PUBLIC_URL` | publicUrl: the URL senders call the deployment by (a QStash token's `sub` is compared with it); alone it does not turn auth on |
 *
 * None set: auth is off. Any set: auth is on and fails closed; a bad value
 * throws at startup (checked by createGatehouse) rather than opening a route.
 */
import type { RouteAuth, ScopedToken, ScopedWebhookSecret } from "./config.ts";

const list = (v: string | undefined) => (v ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);

export function authFromEnv(env: Record<string, string | undefined>): RouteAuth | undefined {
  const tokens: Array<string | ScopedToken> = [];
  const raw = env.GATEHOUSE_TOKENS?.trim();
  if (raw?.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new Error("GATEHOUSE_TOKENS is not valid JSON");
    }
    if (!Array.isArray(parsed)) throw new Error("GATEHOUSE_TOKENS must be a JSON array");
    tokens.push(...(parsed as Array<string | ScopedToken>));
  } else tokens.push(...list(raw));
  if (env.GATEHOUSE_TOKEN) tokens.push(env.GATEHOUSE_TOKEN);
  const rawSecrets = env.GATEHOUSE_WEBHOOK_SECRETS?.trim();
  let webhookSecrets: Array<string | ScopedWebhookSecret>;
  if (rawSecrets?.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawSecrets);
    } catch {
      throw new Error("GATEHOUSE_WEBHOOK_SECRETS is not valid JSON");
    }
    if (!Array.isArray(parsed)) throw new Error("GATEHOUSE_WEBHOOK_SECRETS must be a JSON array");
    webhookSecrets = parsed as Array<string | ScopedWebhookSecret>;
  } else webhookSecrets = list(rawSecrets);
  const current = env.QSTASH_CURRENT_SIGNING_KEY;
  const next = env.QSTASH_NEXT_SIGNING_KEY;
  if (!current !== !next) throw new Error("QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY must be set together");
  const qstashTenants = list(env.GATEHOUSE_QSTASH_TENANTS);
  if (qstashTenants.length > 0 && !current) throw new Error("GATEHOUSE_QSTASH_TENANTS needs QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY");
  if (tokens.length === 0 && webhookSecrets.length === 0 && !current) return undefined;
  const publicUrl = env.GATEHOUSE_PUBLIC_URL?.trim();
  return {
    ...(publicUrl ? { publicUrl } : {}),
    ...(tokens.length > 0 ? { tokens } : {}),
    ...(webhookSecrets.length > 0 ? { webhookSecrets } : {}),
    ...(current && next
      ? { qstash: { currentSigningKey: current, nextSigningKey: next, ...(qstashTenants.length > 0 ? { tenants: qstashTenants } : {}) } }
      : {}),
  };
}
