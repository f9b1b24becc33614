/**
 * Definition versions (docs/operations.md, "Upgrades"). A definition's
 * version is the `version` it was given, else `d` and a digest of what it
 * sends to the model and checks: instructions, the offered tools' names
 * and input schemas, the output schema, the model's name. So a change of
 * any of these is a new version even when nobody named one; a change of
 * code only (a tool's `execute`, a verifier's body) is not: name a version
 * for those.
 *
 * A turn runs under the version it started with (store/port.ts invariant
 * `turn-versions`); `upgradeFrom` lists versions whose turns this one may
 * take over (recorded as a `turn_upgraded` event).
 */
import { canonicalJson } from "../common/canonical-json.ts";
import { digest64 } from "../common/digest.ts";
import { DefinitionError } from "../errors/errors.ts";
import type { AnyTool } from "../tools/define.ts";
import { toJsonSchema, toolSpec } from "../tools/specs.ts";
import type { z } from "zod";

/** A version: 1-64 of [A-Za-z0-9_.:+-] (store/keys.ts `VERSION`). */
export const VERSION_PATTERN = /^[A-Za-z0-9_.:+-]{1,64}$/;

interface VersionInput {
  instructions: string;
  model: { name: string };
  offeredTools: AnyTool[];
  output?: { schema: z.ZodType };
}

/** The default version of a definition: `d` + 16 hex digits of its digest. */
export function defaultVersion(d: VersionInput): string {
  const tools = d.offeredTools.map((t) => {
    const f = toolSpec(t).function;
    return { name: f.name, parameters: f.parameters };
  });
  const output = d.output ? toJsonSchema(d.output.schema) : null;
  return "d" + digest64(canonicalJson({ instructions: d.instructions, model: String(d.model.name), tools, output }));
}

/** Checks `version` and `upgradeFrom`; throws DefinitionError naming the key. */
export function checkVersionKeys(where: string, version: unknown, upgradeFrom: unknown): void {
  if (version !== undefined && (typeof version !== "string" || !VERSION_PATTERN.test(version))) {
    throw new DefinitionError(`${where}: version must be 1-64 of [A-Za-z0-9_.:+-], got ${JSON.stringify(version)}`, { key: "version" });
  }
  if (upgradeFrom === undefined) return;
  if (!Array.isArray(upgradeFrom) || upgradeFrom.some((v) => typeof v !== "string" || !VERSION_PATTERN.test(v))) {
    throw new DefinitionError(`${where}: upgradeFrom must be a list of versions (1-64 of [A-Za-z0-9_.:+-])`, { key: "upgradeFrom" });
  }
  if (version !== undefined && upgradeFrom.includes(version)) {
    throw new DefinitionError(`${where}: upgradeFrom lists the definition's own version ${JSON.stringify(version)}`, { key: "upgradeFrom" });
  }
}

/** A version of the digest's form (`d` + 16 hex digits): a spread definition's default, computed again. */
export function isDigestVersion(v: unknown): boolean {
  return typeof v === "string" && /^d[0-9a-f]{16}$/.test(v);
}
