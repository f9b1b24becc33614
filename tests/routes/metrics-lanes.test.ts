/**
 * The lane gauges of `/metrics` (actors/observe/lane-gauges.ts): one series
 * per lane for the busiest `metricsLanes` lanes, every other lane summed under
 * `key="_other"`, so the number of series is bounded whatever the number of keys.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import { laneGauges } from "../../actors/observe/lane-gauges.ts";

const BASE = "http://gh.test";
const post = (path: string, body: unknown) =>
  new Request(BASE + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("laneGauges", () => {
  it("keeps the busiest n lanes, sums the rest (and the store's others) under _other, merges a key over targets", () => {
    const u = (lanes: Array<[string, number, number]>, others = { lanes: 0, running: 0, queued: 0 }) => ({
      lanes: lanes.map(([key, running, queued]) => ({ key, running, queued })), others,
    });
    const got = laneGauges([u([["a", 2, 3], ["b", 0, 1]]), u([["a", 0, 1], ["c", 1, 0], ["d", 0, 9]], { lanes: 4, running: 1, queued: 1 })], 2);
    expect(got).toEqual([{ key: "d", running: 0, queued: 9 }, { key: "a", running: 2, queued: 4 }, { key: "_other", running: 2, queued: 2 }]);
    expect(laneGauges([u([["a", 1, 0]])], 5)).toEqual([{ key: "a", running: 1, queued: 0 }]);
    expect(laneGauges([u([["a", 1, 0]])], 0)).toEqual([{ key: "_other", running: 1, queued: 0 }]);
  });
});

describe("GET /metrics", () => {
  it("writes gatehouse_lane_queued for the busiest lanes and _other for the rest", async () => {
    const agent = defineAgent({ name: "helper", instructions: "Help.", model: scriptedModel([{ text: "ok" }]) });
    const gh = createGatehouse({ agents: [agent], store: memoryStore(), metricsLanes: 2 });
    const tasks: Array<[string, string]> = [["a1", "t:big"], ["a2", "t:big"], ["a3", "t:big"], ["a4", "t:mid"], ["a5", "t:mid"], ["a6", "t:x"], ["a7", "t:y"], ["a8", "t:z"]];
    for (const [agentId, key] of tasks) {
      expect((await gh.fetch(post(`/v1/agents/${agentId}/tasks`, { agent: "helper", input: "hi", concurrencyKey: key }))).status).toBe(202);
    }
    const text = await (await gh.fetch(new Request(`${BASE}/metrics`))).text();
    const lines = text.split("\n").filter((l) => l.startsWith("gatehouse_lane_queued{"));
    expect(lines).toEqual(['gatehouse_lane_queued{key="t:big"} 3', 'gatehouse_lane_queued{key="t:mid"} 2', 'gatehouse_lane_queued{key="_other"} 3']);
    expect(text).toContain('gatehouse_lane_running{key="_other"} 0');
    expect(text).toContain("# TYPE gatehouse_lane_running gauge");
  });
});
