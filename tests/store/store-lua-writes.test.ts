/**
 * Every store script does all its checks before its first write: a static
 * check of store/lua/*.lua after include expansion (the rules are in
 * tests/helpers/lua-writes.ts). The writes a refusal makes on purpose and
 * the units that refuse nothing are pinned here, so a new one needs a
 * reason in the script and a line in this file.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expand, LUA_DIR } from "../../scripts/bundle-lua.ts";
import { checkScript, tokenize, units } from "../helpers/lua-writes.ts";

const files = readdirSync(LUA_DIR).filter((f) => f.endsWith(".lua")).sort();
const expanded = files.map((f) => ({ file: f, src: expand(readFileSync(join(LUA_DIR, f), "utf8"), LUA_DIR, f) }));
const reports = expanded.map(({ file, src }) => ({ file, ...checkScript(src, file) }));

describe("store scripts: checks before writes", () => {
  it("no script calls a writing command (or a writing helper) before its \"-- checks done\" marker, or refuses after it", () => {
    const problems = reports.flatMap((r) => r.problems);
    expect(problems).toEqual([]);
  });

  it("writes before the marker are only the pinned refusal writes, each with its reason", () => {
    const got = reports.flatMap((r) => r.exemptions.map((e) => `${r.file} ${e.unit} ${e.target}`));
    expect(got).toEqual([
      // The sharded layout's count of a key (store/script/key-slots.ts): it prunes run-out reservations, and a
      // refusal records the waiting lane, rung by the next release.
      "ck_reserve.lua main ZREMRANGEBYSCORE",
      "ck_reserve.lua main SADD",
      // An empty claim drops or moves the bell that rang for nothing (rest_bell, includes/queue.lua);
      // a claim held back by its key's limit prunes the key's run-out leases and parks the lane (invariant `concurrency-keys`).
      "claim.lua claim_agent rest_bell",
      // On the sharded layout a claim that needs a reservation parks its lane provisionally (includes/lanes.lua slot_check).
      "claim.lua claim_agent slot_check",
      "claim.lua claim_agent lane_full",
      "claim.lua claim_agent park_lane",
      "claim_next.lua claim_agent rest_bell",
      "claim_next.lua claim_agent slot_check",
      "claim_next.lua claim_agent lane_full",
      "claim_next.lua claim_agent park_lane",
      // A commit refused with tool_call_resolved releases the lease (and its slot) and rings the bell.
      "commit.lua main HSET",
      "commit.lua main release_run",
      "commit.lua main set_bell",
      // So does a commit refused with cancel_pending (store/port.ts invariant `firm-cancels`).
      "commit.lua main HSET",
      "commit.lua main release_run",
      "commit.lua main set_bell",
    ]);
    for (const r of reports) for (const e of r.exemptions) expect(e.why.length, `${r.file}:${e.line}`).toBeGreaterThan(10);
  });

  it("units that write without checks say so, and read-only scripts say so and write nothing", () => {
    const noChecks = reports.flatMap((r) => r.writers.filter((w) => w.marker === "no checks").map((w) => `${r.file} ${w.unit}`));
    // push_all, append_events and set_head (includes/head.lua) are in every script that includes head.lua,
    // set_bell, drop_bell, place_lane and set_tick (includes/keys.lua) in every script that includes keys.lua,
    // the lane helpers (includes/lanes.lua) in every script that includes lanes.lua,
    // end_turn (includes/end_turn.lua) in the two that end a turn from outside, retain
    // (includes/retention.lua) in the commit, after its checks; queue_task, settle_old_tail, pop_task and
    // rest_bell (includes/queue.lua) in every script that includes queue.lua.
    expect(noChecks.filter((n) => !/ (push_all|append_events|set_bell|drop_bell|place_lane|set_lane|relane_idle|lane_full|park_lane|serve_lane|run_under|release_run|renew_run|ring_lane|repark|slot_check|chain_slot|set_tick|set_head|queue_task|settle_old_tail|pop_task|rest_bell)$/.test(n))).toEqual([
      // ck_release gives a reservation back (one already gone removes nothing); ck_ring wakes a parked lane.
      "ck_release.lua main", "ck_ring.lua main",
      "claim.lua main", "claim_next.lua main", "claim_next.lua visit_schedule",
      // visit_lane (claim_next.lua): each visit claims (claim_agent checks first) or moves the visited bell.
      "claim_next.lua visit_lane", "commit.lua retain", "definition_sets.lua main", "due_schedule.lua main",
      "due_tool_calls.lua main",
      // write_enqueue (includes/enqueue.lua): the writes of an enqueue after check_enqueue, in the two scripts that enqueue.
      "enqueue_task.lua write_enqueue",
      // event_waits drops the waits it is given and keeps an event's first arrival: nothing to refuse.
      "event_waits.lua main",
      "fire_schedule.lua write_enqueue",
      "record_claim_failure.lua end_turn", "reset_turn.lua end_turn",
    ]);
    const checked = reports.flatMap((r) => r.writers.filter((w) => w.marker === "checks done").map((w) => `${r.file} ${w.unit}`));
    expect(checked).toEqual([
      "cancel_task.lua main",
      "ck_renew.lua main",
      "ck_reserve.lua main",
      "claim.lua claim_agent",
      "claim_next.lua claim_agent",
      "commit.lua main",
      "create_fork.lua main",
      "decide_approval.lua main",
      "delete_agent.lua main",
      "delete_schedule.lua main",
      "deliver_tool_result.lua main",
      "delivery.lua main",
      "enqueue_task.lua main",
      "fire_schedule.lua main",
      "put_schedule.lua main",
      "put_verdict.lua main",
      "rate_limit.lua main",
      "record_claim_failure.lua main",
      "record_fork.lua main",
      "record_tool_method.lua main",
      "renew_lease.lua main",
      "request_cancel.lua main",
      "reset_turn.lua main",
      "skip_due_tool_call.lua main",
      "target_lease.lua main",
    ]);
    const readOnly = reports.filter((r) => !r.writers.some((w) => w.unit === "main")).map((r) => r.file);
    expect(readOnly).toEqual([
      "concurrency_usage.lua", "get_agent.lua", "get_schedules.lua", "get_tool_calls.lua", "get_tool_role.lua", "get_turn.lua", "get_verdict.lua", "list_agents.lua",
      "list_queued_tasks.lua", "list_tool_roles.lua", "list_verdicts.lua",
      "next_ready_at.lua", "ping.lua",
      "read_checkpoint.lua",
      "read_conversation.lua", "read_events.lua", "read_messages.lua", "ready_count.lua",
    ]);
  });
});

describe("the checker itself", () => {
  const helpers = `
local function read(k) return redis.call('HGET', k, 'x') end
local function push(k, v)
  -- no checks: appends.
  return redis.call('RPUSH', k, v)
end
`;
  const problemsOf = (main: string) => checkScript(helpers + main, "t.lua").problems;
  const readsOnly = "-- reads only\n";

  it("accepts checks, then the marker, then writes and one final return", () => {
    expect(problemsOf(`
if read(KEYS[1]) then
  return 'exists'
end
-- checks done
redis.call('SET', KEYS[1], '1')
push(KEYS[2], 'a')
return 'ok'
`)).toEqual([]);
  });

  it("finds a write command before the marker, also in a branch, also through redis.pcall", () => {
    expect(problemsOf(`
if read(KEYS[1]) then
  redis.pcall('hset', KEYS[1], 'a', 'b')
  return 'exists'
end
-- checks done
return 'ok'
`)).toEqual([expect.stringMatching(/t\.lua \(main chunk\):\d+: HSET before "-- checks done"/)]);
  });

  it("finds a call of a writing helper before the marker", () => {
    expect(problemsOf(`
push(KEYS[2], 'a')
if read(KEYS[1]) then return 'exists' end
-- checks done
redis.call('SET', KEYS[1], '1')
return 'ok'
`)).toEqual([expect.stringMatching(/push\(\) \(writes\) before/)]);
  });

  it("finds a check moved after the marker: a return inside a block after it", () => {
    expect(problemsOf(`
-- checks done
redis.call('SET', KEYS[1], '1')
if read(KEYS[1]) then
  return 'turn'
end
return 'ok'
`)).toEqual([expect.stringMatching(/return inside a block after "-- checks done"/)]);
  });

  it("accepts a second success reply after the marker when it is annotated", () => {
    const branch = (note: string) => `
if read(KEYS[1]) then return 'exists' end
-- checks done
redis.call('SET', KEYS[1], '1')
if read(KEYS[2]) then
  redis.call('SET', KEYS[2], '1')${note}
  return 'retry'
end
return 'ok'
`;
    expect(problemsOf(branch(""))).toEqual([expect.stringMatching(/return inside a block after/)]);
    expect(problemsOf(branch("\n  -- outcome after checks done: the retry reply"))).toEqual([]);
  });

  it("accepts an annotated refusal write, and reports it", () => {
    const r = checkScript(helpers + `
if read(KEYS[1]) then
  -- write before checks done: the refusal drops the bell
  redis.call('ZREM', KEYS[3], 'a')
  return 'empty'
end
-- checks done
redis.call('SET', KEYS[1], '1')
return 'ok'
`, "t.lua");
    expect(r.problems).toEqual([]);
    expect(r.exemptions).toEqual([{ unit: "main", target: "ZREM", line: expect.any(Number), why: "the refusal drops the bell" }]);
  });

  it("requires exactly one marker in a writing unit, none in a reading one, and literal known commands", () => {
    expect(problemsOf(`redis.call('SET', KEYS[1], '1')`)).toEqual([expect.stringMatching(/needs exactly one .* found 0/)]);
    expect(problemsOf(`-- checks done\n${readsOnly}return read(KEYS[1])`)).toEqual([expect.stringMatching(/carries a marker but writes nothing/)]);
    expect(problemsOf(`return read(KEYS[1])`)).toEqual([expect.stringMatching(/writes nothing, so it says "-- reads only" once, found 0/)]);
    expect(problemsOf(`${readsOnly}return read(KEYS[1])`)).toEqual([]);
    expect(problemsOf(`${readsOnly}-- checks done\nredis.call('SET', KEYS[1], '1')`)).toEqual([expect.stringMatching(/says "-- reads only" but writes/)]);
    expect(problemsOf(`local c = 'SET'\n-- checks done\n${readsOnly}redis.call(c, KEYS[1], '1')`)).toEqual([
      expect.stringMatching(/not a string literal/),
      expect.stringMatching(/carries a marker but writes nothing/),
    ]);
    expect(problemsOf(`-- checks done\nredis.call('OBJECT', 'FREQ', KEYS[1])\nredis.call('SET', KEYS[1], '1')`)).toEqual([
      expect.stringMatching(/OBJECT is neither a known read nor a known write/),
    ]);
    expect(problemsOf(`if read(KEYS[1]) then\n  -- checks done\n  redis.call('SET', KEYS[1], '1')\nend`)).toEqual([
      expect.stringMatching(/must stand at the unit's top level/),
    ]);
  });

  it("tokenizes long strings, long comments and escapes without seeing calls inside them", () => {
    const toks = tokenize(`--[==[ redis.call('SET') ]==]\nlocal s = [[redis.call('DEL', k)]] .. 'it\\'s' -- redis.call('SET')`);
    expect(toks.filter((t) => t.kind === "name").map((t) => t.text)).toEqual(["local", "s"]);
    expect(units(`local function f() if x then return 1 end end\nf()`).map((u) => u.name)).toEqual(["main", "f"]);
  });
});
