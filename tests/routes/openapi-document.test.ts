/**
 * The served OpenAPI document, checked by real validators: swagger-parser
 * (schema and $refs) and Redocly's `recommended` ruleset, with auth off and
 * on; and compared with the committed docs/openapi.json, so an unintended
 * change to the HTTP surface shows in review (`npm run openapi:snapshot`
 * rewrites it).
 */
import { readFileSync } from "node:fs";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../machines/event-log.ts";
import { servedDocument, SNAPSHOT, snapshotText } from "../../scripts/openapi-snapshot.ts";

/** Routes that answer no 4XX by design (no input, no token): Redocly warns about them, nothing else. */
const NO_CLIENT_ERRORS = ["/healthz", "/readyz", "/debug", "/debug/agents/{agentId}", "/debug/app.js", "/debug/app.css", "/favicon.ico"];
const NO_CLIENT_ERRORS_WITHOUT_AUTH = ["/v1/machine", "/metrics", "/openapi.json", "/v1/tools", "/v1/versions"];

async function lint(doc: unknown) {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "openapi.json", config });
  return problems.map((p) => ({ severity: p.severity, rule: p.ruleId, message: p.message, at: p.location[0]?.pointer }));
}

const pointer = (path: string) => `#/paths/${path.replace(/~/g, "~0").replace(/\//g, "~1")}/get/responses`;

describe("the OpenAPI document", () => {
  for (const auth of [false, true]) {
    it(`is valid for swagger-parser and Redocly recommended (auth ${auth ? "on" : "off"})`, async () => {
      const doc = await servedDocument(auth);
      const api = await SwaggerParser.validate(structuredClone(doc) as never);
      expect(Object.keys(api.paths ?? {}).length).toBeGreaterThanOrEqual(20);
      const problems = await lint(doc);
      expect(problems.filter((p) => p.severity === "error")).toEqual([]);
      const expected = [...NO_CLIENT_ERRORS, ...(auth ? [] : NO_CLIENT_ERRORS_WITHOUT_AUTH)].map(pointer).sort();
      expect(problems.filter((p) => p.severity === "warn").map((p) => `${p.rule} ${p.at}`).sort())
        .toEqual(expected.map((at) => `operation-4xx-response ${at}`).sort());
    });
  }

  it("names servers, license and, with auth on, the bearer scheme as the default", async () => {
    const off = await servedDocument(false) as Record<string, any>;
    expect(off.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(off.info.license.name).toBe("MIT");
    expect(off.security).toEqual([]);
    const on = await servedDocument(true) as Record<string, any>;
    expect(on.security).toEqual([{ bearerAuth: [] }]);
    expect(on.components.securitySchemes.bearerAuth).toEqual({ type: "http", scheme: "bearer" });
    expect(on.paths["/v1/agents/{agentId}/tasks"].post.responses["401"]["x-problem-codes"]).toEqual(["unauthorized"]);
    expect(off.paths["/v1/agents/{agentId}/tasks"].post.responses["401"]).toBeUndefined();
  });

  it("types the events page as a union discriminated on type: one component per runtime event type, plus CustomEvent", async () => {
    const doc = await servedDocument() as Record<string, any>;
    const schemas = doc.components.schemas;
    const ref = (name: string) => `#/components/schemas/${name}`;
    const page = doc.paths["/v1/agents/{agentId}/events"].get.responses["200"].content;
    expect(schemas.EventsPage.properties.events.items).toEqual({ $ref: ref("StoredEvent") });
    expect(page["text/event-stream"].itemSchema ?? page["text/event-stream"].schema).toBeDefined();
    expect(schemas.StoredEvent.oneOf).toEqual([{ $ref: ref("RuntimeEvent") }, { $ref: ref("CustomEvent") }]);
    const { discriminator, oneOf } = schemas.RuntimeEvent;
    expect(discriminator.propertyName).toBe("type");
    expect(Object.keys(discriminator.mapping)).toEqual(EVENT_TYPES);
    expect(oneOf).toEqual(EVENT_TYPES.map((t) => ({ $ref: discriminator.mapping[t] })));
    for (const t of EVENT_TYPES) {
      const component = schemas[discriminator.mapping[t].replace(ref(""), "")];
      expect(component.properties.type.enum).toEqual([t]);
      expect(component.required).toEqual(expect.arrayContaining(["id", "type", "data", "at", "turnId"]));
    }
    expect(schemas.CustomEvent.properties.type.not).toEqual({ enum: EVENT_TYPES });
  });

  it("matches docs/openapi.json (run `npm run openapi:snapshot` after an intended change)", async () => {
    expect(snapshotText(await servedDocument())).toBe(readFileSync(SNAPSHOT, "utf8"));
  });
});
