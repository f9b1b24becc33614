/**
 * Writes docs/openapi.json: the document `GET /openapi.json` serves (auth
 * off, default limits), so a change to the HTTP surface shows up in review.
 *
 *   npm run openapi:snapshot
 *
 * tests/routes/openapi-document.test.ts fails when the file is out of date.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatehouse, defineAgent, scriptedModel } from "../mod.ts";

export const SNAPSHOT = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "openapi.json");

/** The served document, with or without bearer auth. */
export async function servedDocument(auth = false): Promise<Record<string, unknown>> {
  const token = "snapshot-token-0123456789";
  const gh = createGatehouse({
    agents: [defineAgent({ name: "helper", instructions: "Answer.", model: scriptedModel([{ text: "ok" }]) })],
    ...(auth ? { auth: { bearerTokens: [token] } } : {}),
  });
  const res = await gh.fetch(new Request("http://gatehouse.test/openapi.json", { headers: { authorization: `Bearer ${token}` } }));
  if (res.status !== 200) throw new Error(`Cannot read /openapi.json: ${res.status}`);
  return await res.json();
}

export const snapshotText = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(SNAPSHOT, snapshotText(await servedDocument()));
  console.log(`wrote ${SNAPSHOT}`);
}
