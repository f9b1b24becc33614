/**
 * The side stores of the script store (store/port.ts `SideStores`): verdicts, delivery
 * dedup, rate limits, target leases, the tool registry, forks, definition sets.
 * Each operation is a top-level function of the store's ScriptContext over
 * its scripts, described here (store/script/operation.ts): layout, reply words, decoding.
 */
import type { AnnounceDefinitionSetRequest, ClaimDeliveryRequest, ClaimDeliveryResult, CreateForkRequest, CreateForkResult, DefinitionSetRecord, RateLimitRequest, RateLimitResult, RecordDeliveryRequest, RecordForkRequest, RecordToolMethodRequest, RecordToolMethodResult, RenewDeliveryRequest, SettleDeliveryResult, SideStores, TargetLeaseRequest, TargetLeaseResult, VerdictFilter, VerdictPut } from "../port.ts";
import { checkAgentName, checkDeliveryTarget, checkHolder, checkTarget, checkToolName, checkTurnId, StoreInputError, toolCalls } from "../keys.ts";
import { definitionSetRecord, definitionSetText } from "../definition-set-form.ts";
import { gcraArgs } from "../rate-limit.ts";
import { loadToolRoleEntry, methodForm, type ToolRoleEntry } from "../../common/tool-registry.ts";
import { int, j, tail } from "./values.ts";
import { compactSnapshot } from "../snapshot-form.ts";
import { json, scriptOp } from "./operation.ts";
import { StoreReplyError } from "../script-runner.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/put_verdict.lua */
export const PUT_VERDICT = scriptOp({
  script: "put_verdict",
  keys: ["verdict_list", "head", "verdicts"],
  argv: ["verdict_id", "entry", "record"],
  words: ["written", "exists"],
}, (word) => ({ status: word }));

/** store/lua/get_verdict.lua */
export const GET_VERDICT = scriptOp({
  script: "get_verdict",
  keys: ["verdicts"],
  argv: ["verdict_id"],
  words: ["verdict", "none"],
}, (word, payload) => (word === "verdict" ? payload : null));

/** store/lua/list_verdicts.lua */
export const LIST_VERDICTS = scriptOp({
  script: "list_verdicts",
  keys: ["verdict_list", "verdicts"],
  argv: ["by_turn_flag", "turn_id", "by_status_flag", "status"],
  words: ["list"],
}, (_word, payload) => json<string[]>(payload));

/** store/lua/delivery.lua */
export const DELIVERY = scriptOp({
  script: "delivery",
  keys: ["record"],
  argv: ["mode", "now_text", "target", "holder", "window_text", "hold_text", "response_arg"],
  optional: ["response_arg"],
  words: ["fresh", "in_progress", "answered", "other_target", "renewed", "lost", "written"],
}, (word, payload) => {
  if (word === "answered") return { status: word, response: json(payload) } as ClaimDeliveryResult | SettleDeliveryResult;
  if (word === "in_progress") return { status: word, holdUntil: Number(payload) };
  return { status: word };
});

/** store/lua/rate_limit.lua */
export const RATE_LIMIT = scriptOp({
  script: "rate_limit",
  keys: [],
  argv: ["now_ms"],
  keysRest: "buckets",
  argvRest: "limits",
  words: ["allowed", "limited"],
}, (word, payload): RateLimitResult => {
  if (word === "allowed") return { status: "allowed" };
  const [bucket, wait] = payload.split(" ").map(Number);
  return { status: "limited", bucket, retryAfterMs: wait };
});

/** store/lua/target_lease.lua */
export const TARGET_LEASE = scriptOp({
  script: "target_lease",
  keys: ["lease"],
  argv: ["mode", "holder", "now_text", "lease_ms"],
  optional: ["lease_ms"],
  words: ["held", "busy", "released", "not_held"],
}, (word, payload) => {
  if (word === "held") return { status: "held", leaseUntil: Number(payload) } as TargetLeaseResult;
  if (word === "busy") {
    const sp = payload.indexOf(" ");
    return { status: "busy", leaseUntil: Number(payload.slice(0, sp)), holder: payload.slice(sp + 1) } as TargetLeaseResult;
  }
  return { status: word } as { status: "released" | "not_held" };
});

/** store/lua/definition_sets.lua */
export const DEFINITION_SETS = scriptOp({
  script: "definition_sets",
  keys: ["sets"],
  argv: ["own", "now_text", "ttl_text", "withdraw"],
  words: ["list"],
}, (_word, payload): DefinitionSetRecord[] => json<Array<[string, number]>>(payload).map(([set, seenAt]) => definitionSetRecord(set, seenAt)));

/** store/lua/record_tool_method.lua */
export const RECORD_TOOL_METHOD = scriptOp({
  script: "record_tool_method",
  keys: ["tools", "forms"],
  argv: ["role", "method", "form", "now_text", "calls_text"],
  words: ["recorded"],
}, (_word, payload): RecordToolMethodResult => {
  const r = json<{ added: "method" | "alias" | "none"; entry: { role?: unknown } }>(payload);
  const entry = loadToolRoleEntry(String(r.entry?.role ?? ""), r.entry);
  if (!entry) throw new StoreReplyError("Script record_tool_method answered an entry that is not an object");
  return { status: "recorded", added: r.added, entry };
});

/** store/lua/get_tool_role.lua */
export const GET_TOOL_ROLE = scriptOp({
  script: "get_tool_role",
  keys: ["tools"],
  argv: ["role"],
  words: ["entry", "none"],
}, (word, payload) => (word === "entry" ? payload : null));

/** store/lua/list_tool_roles.lua */
export const LIST_TOOL_ROLES = scriptOp({
  script: "list_tool_roles",
  keys: ["tools"],
  argv: [],
  words: ["list"],
}, (_word, payload) => json<Array<[string, string]> | Record<string, never>>(payload));

/** store/lua/create_fork.lua */
export const CREATE_FORK = scriptOp({
  script: "create_fork",
  keys: ["head", "msgs", "events", "calls", "deadlines", "inputs", "ready"],
  argv: ["prefix", "agent_id", "agent_id_json", "name_json", "target_json", "snapshot", "state", "turn_json", "turn_raw", "current_task", "input_json", "runnable", "now_str", "event_tail", "n_msg_text", "n_call_text"],
  keysRest: "long_keys",
  argvRest: "items",
  words: ["created", "exists"],
}, (word, payload) => (word === "created" ? { status: word, ...json<{ lastEventId: number }>(payload) } : { status: word }) as CreateForkResult);

/** store/lua/record_fork.lua */
export const RECORD_FORK = scriptOp({
  script: "record_fork",
  keys: ["head", "events"],
  argv: ["now_str", "event_tail"],
  words: ["recorded", "agent_not_found"],
}, (word, payload) => (word === "recorded" ? { status: word, ...json<{ eventId: number }>(payload) } : { status: word }));

/** The result type of the port method `K`. */
type Ret<K extends keyof SideStores> = ReturnType<NonNullable<SideStores[K]>>;

export async function putVerdict(c: ScriptContext, req: VerdictPut): Ret<"putVerdict"> {
  const { keys, run } = c;
  const k = keys.agent(req.agentId);
  return run(PUT_VERDICT, {
    verdict_list: k.verdicts, head: k.head, verdicts: k.home.verdicts,
    verdict_id: req.verdictId, entry: j([req.verdictId, req.turnId, req.status]), record: req.json,
  });
}

export async function getVerdict(c: ScriptContext, verdictId: string): Promise<string | null> {
  const { shards, run } = c;
  // The id does not name its agent: ask every home (one on the unsharded layout).
  const found = await Promise.all(shards.map((s) => run(GET_VERDICT, { verdicts: s.verdicts, verdict_id: verdictId })));
  return found.find((v) => v !== null) ?? null;
}

export async function listVerdicts(c: ScriptContext, agentId: string, filter: VerdictFilter): Promise<string[]> {
  const { keys, run } = c;
  const k = keys.agent(agentId);
  return run(LIST_VERDICTS, {
    verdict_list: k.verdicts, verdicts: k.home.verdicts,
    by_turn_flag: filter.turnId !== undefined ? "1" : "0", turn_id: filter.turnId ?? "",
    by_status_flag: filter.status !== undefined ? "1" : "0", status: filter.status ?? "",
  });
}

export async function claimDelivery(c: ScriptContext, req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult> {
  const { keys, run } = c;
  return run(DELIVERY, {
    record: keys.delivery(req.messageId),
    mode: "claim", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder),
    window_text: int(req.windowMs, "windowMs"), hold_text: int(req.holdMs, "holdMs"),
  }) as Promise<ClaimDeliveryResult>;
}

export async function renewDelivery(c: ScriptContext, req: RenewDeliveryRequest): Promise<SettleDeliveryResult> {
  const { keys, run } = c;
  return run(DELIVERY, {
    record: keys.delivery(req.messageId),
    mode: "renew", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder),
    window_text: "0", hold_text: int(req.holdMs, "holdMs"),
  }) as Promise<SettleDeliveryResult>;
}

export async function recordDelivery(c: ScriptContext, req: RecordDeliveryRequest): Promise<SettleDeliveryResult> {
  const { keys, run } = c;
  const response = req.response === null
    ? ""
    : j({ status: Number(int(req.response.status, "status")), contentType: String(req.response.contentType), body: String(req.response.body) });
  return run(DELIVERY, {
    record: keys.delivery(req.messageId),
    mode: req.response === null ? "forget" : "record", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target),
    holder: checkHolder(req.holder), window_text: int(req.windowMs, "windowMs"), hold_text: "0", response_arg: response,
  }) as Promise<SettleDeliveryResult>;
}

export async function rateLimit(c: ScriptContext, req: RateLimitRequest): Promise<RateLimitResult> {
  const { keys, run } = c;
  const now = int(req.now, "now");
  const { intervals, tolerances } = gcraArgs(req.buckets);
  if (req.buckets.length === 0) return { status: "allowed" };
  return run(RATE_LIMIT, { buckets: req.buckets.map((b) => keys.rateLimit(b.key)), now_ms: now, limits: [...intervals, ...tolerances] });
}

export async function acquireTargetLease(c: ScriptContext, req: TargetLeaseRequest): Promise<TargetLeaseResult> {
  const { keys, run } = c;
  const leaseMs = int(req.leaseMs, "leaseMs");
  if (req.leaseMs < 1) throw new StoreInputError(`leaseMs must be at least 1, got ${req.leaseMs}`);
  return run(TARGET_LEASE, {
    lease: keys.targetLease(req.workerTarget), mode: "acquire", holder: checkHolder(req.holder), now_text: int(req.now, "now"), lease_ms: leaseMs,
  }) as Promise<TargetLeaseResult>;
}

export async function releaseTargetLease(c: ScriptContext, req: Omit<TargetLeaseRequest, "leaseMs">): Ret<"releaseTargetLease"> {
  const { keys, run } = c;
  return run(TARGET_LEASE, { lease: keys.targetLease(req.workerTarget), mode: "release", holder: checkHolder(req.holder), now_text: int(req.now, "now") }) as Ret<"releaseTargetLease">;
}

export async function recordToolMethod(c: ScriptContext, req: RecordToolMethodRequest): Promise<RecordToolMethodResult> {
  const { keys, run } = c;
  checkToolName(req.role, "role");
  checkToolName(req.method, "method");
  const n = toolCalls(req.calls);
  return run(RECORD_TOOL_METHOD, {
    tools: keys.tools, forms: keys.toolForms,
    role: req.role, method: req.method, form: methodForm(req.method), now_text: int(req.now, "now"), calls_text: String(n),
  });
}

export async function getToolRole(c: ScriptContext, role: string): Promise<ToolRoleEntry | null> {
  const { keys, run } = c;
  checkToolName(role, "role");
  const text = await run(GET_TOOL_ROLE, { tools: keys.tools, role });
  return text === null ? null : loadToolRoleEntry(role, text);
}

export async function listToolRoles(c: ScriptContext): Promise<ToolRoleEntry[]> {
  const { keys, run } = c;
  const pairs = await run(LIST_TOOL_ROLES, { tools: keys.tools });
  return (Array.isArray(pairs) ? pairs : []).flatMap(([role, text]) => loadToolRoleEntry(role, text) ?? []);
}

export async function createFork(c: ScriptContext, req: CreateForkRequest): Promise<CreateForkResult> {
  const { keys, longKeys, dropHints, run } = c;
  dropHints(Math.min(req.now, req.runnableAt ?? req.now));
  const k = keys.agent(req.agentId);
  const turn = req.activeTurnId;
  if (turn !== null) checkTurnId(turn);
  const named = {
    prefix: k.home.prefix, agent_id: req.agentId, agent_id_json: j(req.agentId), name_json: j(req.agentName),
    target_json: j(checkTarget(req.workerTarget)), snapshot: j(compactSnapshot(req.snapshot)), state: j(req.state),
    turn_json: j(turn), turn_raw: turn ?? "", current_task: j(req.currentTask),
    input_json: turn !== null && req.input !== undefined ? j(req.input) : "",
    runnable: req.runnableAt === null ? "null" : int(req.runnableAt, "runnableAt"), now_str: int(req.now, "now"),
    event_tail: tail({ type: req.event.type, data: req.event.data }),
    n_msg_text: String(req.messages.length), n_call_text: String(turn === null ? 0 : req.toolCalls.length),
  };
  // The items (create_fork.lua ARGV[17..]): the messages, then the pending calls.
  const args: string[] = [];
  for (const m of req.messages) args.push(j(m));
  if (turn !== null) {
    for (const c of req.toolCalls) {
      args.push(c.toolCallId, j({ agentId: req.agentId, turnId: turn, toolCallId: c.toolCallId, name: c.name, args: c.args, external: c.external, deadline: c.deadline, recordedAt: req.now, ...(c.approval ? { approval: c.approval } : {}) }), int(c.deadline, "deadline"));
    }
  }
  return run(CREATE_FORK, {
    head: k.head, msgs: k.messages, events: k.events, calls: k.calls(turn ?? ""), deadlines: k.home.deadlines, inputs: k.inputs,
    ready: k.home.ready(req.workerTarget), long_keys: longKeys(k), ...named, items: args,
  });
}

export async function recordFork(c: ScriptContext, req: RecordForkRequest): Ret<"recordFork"> {
  const { keys, run } = c;
  const k = keys.agent(req.agentId);
  return run(RECORD_FORK, { head: k.head, events: k.events, now_str: int(req.now, "now"), event_tail: tail({ type: req.event.type, data: req.event.data }) });
}

export async function announceDefinitionSet(c: ScriptContext, req: AnnounceDefinitionSetRequest): Ret<"announceDefinitionSet"> {
  const { keys, run } = c;
  const own = definitionSetText(req);
  const others = await run(DEFINITION_SETS, {
    sets: keys.definitionSets, own, now_text: int(req.now, "now"), ttl_text: int(req.ttlMs, "ttlMs"), withdraw: req.withdraw ? "1" : "",
  });
  return { others };
}
