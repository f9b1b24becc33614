/**
 * How a definition set is kept in the store (store/port.ts invariants
 * `definition-sets`, `turn-versions`): one text per set, its sorted agent
 * names joined by ","; a set that announces versions or formats adds a
 * newline and the JSON of `{ formats, versions }`. Both adapters keep the
 * same text, so two processes announcing the same set share one record.
 * A build that predates versions reads such a record's names up to the
 * newline as one name: its warning about another set stays a warning.
 */
import type { AnnounceDefinitionSetRequest, DefinitionSetRecord } from "./port.ts";
import { canonicalJson } from "../common/canonical-json.ts";
import { checkAgentName, checkVersion, StoreInputError } from "./keys.ts";

/** The stored text of the set `req` announces (names checked). */
export function definitionSetText(req: AnnounceDefinitionSetRequest): string {
  const names = [...req.agents].map(checkAgentName).sort();
  const extra: { formats?: string[]; versions?: Record<string, string[]> } = {};
  if (req.versions) {
    const versions: Record<string, string[]> = {};
    for (const [n, vs] of Object.entries(req.versions)) {
      if (!names.includes(checkAgentName(n))) throw new StoreInputError(`Cannot announce versions of ${JSON.stringify(n)}: not among the set's agents`);
      versions[n] = vs.map(checkVersion);
    }
    extra.versions = versions;
  }
  if (req.formats) extra.formats = req.formats.map(checkFormat).sort();
  const own = names.join(",");
  return extra.versions || extra.formats ? `${own}\n${canonicalJson(extra)}` : own;
}

/** A stored set text read back as a record. */
export function definitionSetRecord(text: string, seenAt: number): DefinitionSetRecord {
  const nl = text.indexOf("\n");
  if (nl < 0) return { agents: text.split(","), seenAt };
  const rec: DefinitionSetRecord = { agents: text.slice(0, nl).split(","), seenAt };
  try {
    const extra = JSON.parse(text.slice(nl + 1)) as { formats?: unknown; versions?: unknown };
    if (Array.isArray(extra.formats)) rec.formats = extra.formats.map(String);
    if (extra.versions && typeof extra.versions === "object") {
      rec.versions = Object.fromEntries(Object.entries(extra.versions).map(([n, vs]) => [n, Array.isArray(vs) ? vs.map(String) : []]));
    }
  } catch {
    // A record this build cannot read names its agents only.
  }
  return rec;
}

/** A storage format name (store/formats.ts): 1-64 of [a-z0-9_.-]. */
function checkFormat(f: string): string {
  if (typeof f !== "string" || !/^[a-z0-9_.-]{1,64}$/.test(f)) throw new StoreInputError(`Cannot announce storage format ${JSON.stringify(f)}`);
  return f;
}
