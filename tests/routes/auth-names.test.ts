/**
 * Names of tokens and webhook secrets (routes/auth/config.ts): a name is 1
 * to 64 letters, digits or `._@:-`, used once among the tokens and once
 * among the secrets; a bad one refuses the configuration at construction
 * with a message that says what is wrong (never a route that opens later).
 * `GATEHOUSE_TOKENS` and `GATEHOUSE_WEBHOOK_SECRETS` carry names in their
 * JSON form; bad input there is a startup error naming the variable or the
 * rule.
 */
import { describe, expect, it } from "vitest";
import { authFromEnv, createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import { checkAuthConfig } from "../../routes/auth.ts";
import { normalizeTokens, signerScope } from "../../routes/auth/config.ts";

const T1 = "first-token-0123456789";
const T2 = "second-token-012345678";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

describe("token and webhook secret names", () => {
  it("a scoped token's and a webhook secret's name are kept; a plain token has none", () => {
    const auth = { tokens: [{ token: T1, name: "alice@ops" }, T2, { token: "third-token-0123456789" }], bearerTokens: ["bearer-token-012345678"] };
    expect(checkAuthConfig(auth)).toBeNull();
    expect(normalizeTokens(auth).map((t) => t.name)).toEqual([null, "alice@ops", null, null]);
    expect(signerScope({ secret: SECRET, name: "billing" } as never).name).toBe("billing");
    expect(signerScope(SECRET).name).toBeNull();
  });

  it("refuses a name that is empty, too long, not a string or of other characters, saying what a name is", () => {
    for (const name of ["", "x".repeat(65), "alice smith", "a/b", 42, null, "ünïcode"]) {
      expect(checkAuthConfig({ tokens: [{ token: T1, name } as never] })).toMatch(/a token's name must be 1 to 64 letters, digits or \._@:-/);
      expect(checkAuthConfig({ webhookSecrets: [{ secret: SECRET, name } as never] })).toMatch(/a webhook secret's name must be 1 to 64/);
    }
    expect(checkAuthConfig({ tokens: [{ token: T1, name: "x".repeat(64) }] })).toBeNull();
  });

  it("refuses the same name on two tokens, or on two secrets (a name says who acted)", () => {
    expect(checkAuthConfig({ tokens: [{ token: T1, name: "ops" }, { token: T2, name: "ops" }] })).toMatch(/two tokens are named "ops"/);
    expect(checkAuthConfig({ webhookSecrets: [{ secret: SECRET, name: "ops" }, { secret: `${SECRET}x`, name: "ops" }] }))
      .toMatch(/two webhook secrets are named "ops"/);
    // A token and a secret may share a name: one party with both.
    expect(checkAuthConfig({ tokens: [{ token: T1, name: "billing" }], webhookSecrets: [{ secret: SECRET, name: "billing" }] })).toBeNull();
  });

  it("createGatehouse refuses a bad name at construction", () => {
    const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
    expect(() => createGatehouse({ agents: [agent], store: memoryStore(), auth: { tokens: [{ token: T1, name: "no spaces" }] } }))
      .toThrow(/name must be 1 to 64/);
  });
});

describe("GATEHOUSE_TOKENS and GATEHOUSE_WEBHOOK_SECRETS with names", () => {
  it("reads names from the JSON form", () => {
    const auth = authFromEnv({
      GATEHOUSE_TOKENS: JSON.stringify([{ token: T1, name: "alice@ops", verbs: ["read", "approve"] }, T2]),
      GATEHOUSE_WEBHOOK_SECRETS: JSON.stringify([{ secret: SECRET, name: "billing" }]),
    })!;
    expect(checkAuthConfig(auth)).toBeNull();
    expect(auth.tokens).toEqual([{ token: T1, name: "alice@ops", verbs: ["read", "approve"] }, T2]);
    expect(normalizeTokens(auth).map((t) => t.name)).toEqual(["alice@ops", null]);
    expect(auth.webhookSecrets).toEqual([{ secret: SECRET, name: "billing" }]);
  });

  it("bad input is a clear error: not JSON, not an array, an entry that is no token, a bad or repeated name", () => {
    expect(() => authFromEnv({ GATEHOUSE_TOKENS: `[{"token": "${T1}", "name": }]` })).toThrow("GATEHOUSE_TOKENS is not valid JSON");
    expect(() => authFromEnv({ GATEHOUSE_WEBHOOK_SECRETS: "[1," })).toThrow("GATEHOUSE_WEBHOOK_SECRETS is not valid JSON");
    const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
    const start = (env: Record<string, string>) => () => createGatehouse({ agents: [agent], store: memoryStore(), auth: authFromEnv(env) });
    expect(start({ GATEHOUSE_TOKENS: JSON.stringify([{ token: T1, name: "alice smith" }]) })).toThrow(/a token's name must be 1 to 64/);
    expect(start({ GATEHOUSE_TOKENS: JSON.stringify([{ token: T1, name: "a" }, { token: T2, name: "a" }]) })).toThrow(/two tokens are named "a"/);
    expect(start({ GATEHOUSE_TOKENS: JSON.stringify([{ name: "alice" }]) })).toThrow(/each token must be 16 to 4096 visible ASCII characters/);
    expect(start({ GATEHOUSE_WEBHOOK_SECRETS: JSON.stringify([{ secret: SECRET, name: "" }]) })).toThrow(/a webhook secret's name must be/);
  });
});
