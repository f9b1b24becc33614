/**
 * The side stores of the script store (store/port.ts `SideStores`): verdicts, delivery
 * dedup, rate limits, target leases, the tool registry, forks, definition sets.
 * Each operation is a top-level function of the store's ScriptContext; its
 * arguments are built by the script's encoder (store/lua/args/side-stores.ts).
 */
import type { AnnounceDefinitionSetRequest, ClaimDeliveryRequest, ClaimDeliveryResult, CreateForkRequest, CreateForkResult, DefinitionSetRecord, RateLimitRequest, RateLimitResult, RecordDeliveryRequest, RecordForkRequest, RecordToolMethodRequest, RecordToolMethodResult, RenewDeliveryRequest, SettleDeliveryResult, SideStores, TargetLeaseRequest, TargetLeaseResult, VerdictFilter, VerdictPut } from "../port.ts";
import { checkAgentName, checkDeliveryTarget, checkHolder, checkTarget, checkToolName, checkTurnId, StoreInputError, toolCalls } from "../keys.ts";
import { gcraArgs } from "../rate-limit.ts";
import { loadToolRoleEntry, methodForm, type ToolRoleEntry } from "../../common/tool-registry.ts";
import { int, j, tail } from "./values.ts";
import { compactSnapshot } from "../snapshot-form.ts";
import { encodeCreateFork, encodeDefinitionSets, encodeDelivery, encodeGetToolRole, encodeGetVerdict, encodeListToolRoles, encodeListVerdicts, encodePutVerdict, encodeRateLimit, encodeRecordFork, encodeRecordToolMethod, encodeTargetLease } from "../lua/args/side-stores.ts";
import type { ScriptContext } from "./context.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof SideStores> = ReturnType<NonNullable<SideStores[K]>>;

export async function putVerdict(c: ScriptContext, req: VerdictPut): Ret<"putVerdict"> {
  const { keys, call } = c;
  const k = keys.agent(req.agentId);
  return call(encodePutVerdict({
    verdict_list: k.verdicts, head: k.head, verdicts: k.home.verdicts,
    verdict_id: req.verdictId, entry: j([req.verdictId, req.turnId, req.status]), record: req.json,
  }));
}

export async function getVerdict(c: ScriptContext, verdictId: string): Promise<string | null> {
  const { shards, call } = c;
  // The id does not name its agent: ask every home (one on the unsharded layout).
  const found = await Promise.all(shards.map((s) => call<string | null>(encodeGetVerdict({ verdicts: s.verdicts, verdict_id: verdictId }))));
  return found.find((v) => v !== null) ?? null;
}

export async function listVerdicts(c: ScriptContext, agentId: string, filter: VerdictFilter): Promise<string[]> {
  const { keys, call } = c;
  const k = keys.agent(agentId);
  return call(encodeListVerdicts({
    verdict_list: k.verdicts, verdicts: k.home.verdicts,
    by_turn_flag: filter.turnId !== undefined ? "1" : "0", turn_id: filter.turnId ?? "",
    by_status_flag: filter.status !== undefined ? "1" : "0", status: filter.status ?? "",
  }));
}

export async function claimDelivery(c: ScriptContext, req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult> {
  const { keys, call } = c;
  return call(encodeDelivery({
    record: keys.delivery(req.messageId),
    mode: "claim", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder),
    window_text: int(req.windowMs, "windowMs"), hold_text: int(req.holdMs, "holdMs"),
  }));
}

export async function renewDelivery(c: ScriptContext, req: RenewDeliveryRequest): Promise<SettleDeliveryResult> {
  const { keys, call } = c;
  return call(encodeDelivery({
    record: keys.delivery(req.messageId),
    mode: "renew", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder),
    window_text: "0", hold_text: int(req.holdMs, "holdMs"),
  }));
}

export async function recordDelivery(c: ScriptContext, req: RecordDeliveryRequest): Promise<SettleDeliveryResult> {
  const { keys, call } = c;
  const response = req.response === null
    ? ""
    : j({ status: Number(int(req.response.status, "status")), contentType: String(req.response.contentType), body: String(req.response.body) });
  return call(encodeDelivery({
    record: keys.delivery(req.messageId),
    mode: req.response === null ? "forget" : "record", now_text: int(req.now, "now"), target: checkDeliveryTarget(req.target),
    holder: checkHolder(req.holder), window_text: int(req.windowMs, "windowMs"), hold_text: "0", response_arg: response,
  }));
}

export async function rateLimit(c: ScriptContext, req: RateLimitRequest): Promise<RateLimitResult> {
  const { keys, call } = c;
  const now = int(req.now, "now");
  const { intervals, tolerances } = gcraArgs(req.buckets);
  if (req.buckets.length === 0) return { status: "allowed" };
  return call(encodeRateLimit({ buckets: req.buckets.map((b) => keys.rateLimit(b.key)), now_ms: now, limits: [...intervals, ...tolerances] }));
}

export async function acquireTargetLease(c: ScriptContext, req: TargetLeaseRequest): Promise<TargetLeaseResult> {
  const { keys, call } = c;
  const leaseMs = int(req.leaseMs, "leaseMs");
  if (req.leaseMs < 1) throw new StoreInputError(`leaseMs must be at least 1, got ${req.leaseMs}`);
  return call(encodeTargetLease({
    lease: keys.targetLease(req.workerTarget), mode: "acquire", holder: checkHolder(req.holder), now_text: int(req.now, "now"), lease_ms: leaseMs,
  }));
}

export async function releaseTargetLease(c: ScriptContext, req: Omit<TargetLeaseRequest, "leaseMs">): Ret<"releaseTargetLease"> {
  const { keys, call } = c;
  return call(encodeTargetLease({ lease: keys.targetLease(req.workerTarget), mode: "release", holder: checkHolder(req.holder), now_text: int(req.now, "now") }));
}

export async function recordToolMethod(c: ScriptContext, req: RecordToolMethodRequest): Promise<RecordToolMethodResult> {
  const { keys, call } = c;
  checkToolName(req.role, "role");
  checkToolName(req.method, "method");
  const n = toolCalls(req.calls);
  return call(encodeRecordToolMethod({
    tools: keys.tools, forms: keys.toolForms,
    role: req.role, method: req.method, form: methodForm(req.method), now_text: int(req.now, "now"), calls_text: String(n),
  }));
}

export async function getToolRole(c: ScriptContext, role: string): Promise<ToolRoleEntry | null> {
  const { keys, call } = c;
  checkToolName(role, "role");
  const text = await call<string | null>(encodeGetToolRole({ tools: keys.tools, role }));
  return text === null ? null : loadToolRoleEntry(role, text);
}

export async function listToolRoles(c: ScriptContext): Promise<ToolRoleEntry[]> {
  const { keys, call } = c;
  const pairs = await call<Array<[string, string]> | Record<string, never>>(encodeListToolRoles({ tools: keys.tools }));
  return (Array.isArray(pairs) ? pairs : []).flatMap(([role, text]) => loadToolRoleEntry(role, text) ?? []);
}

export async function createFork(c: ScriptContext, req: CreateForkRequest): Promise<CreateForkResult> {
  const { keys, longKeys, dropHints, call } = c;
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
  return call(encodeCreateFork({
    head: k.head, msgs: k.messages, events: k.events, calls: k.calls(turn ?? ""), deadlines: k.home.deadlines, inputs: k.inputs,
    ready: k.home.ready(req.workerTarget), long_keys: longKeys(k), ...named, items: args,
  }));
}

export async function recordFork(c: ScriptContext, req: RecordForkRequest): Ret<"recordFork"> {
  const { keys, call } = c;
  const k = keys.agent(req.agentId);
  return call(encodeRecordFork({ head: k.head, events: k.events, now_str: int(req.now, "now"), event_tail: tail({ type: req.event.type, data: req.event.data }) }));
}

export async function announceDefinitionSet(c: ScriptContext, req: AnnounceDefinitionSetRequest): Ret<"announceDefinitionSet"> {
  const { keys, call } = c;
  const own = [...req.agents].map(checkAgentName).sort().join(",");
  const others = await call<DefinitionSetRecord[]>(encodeDefinitionSets({
    sets: keys.definitionSets, own, now_text: int(req.now, "now"), ttl_text: int(req.ttlMs, "ttlMs"),
  }));
  return { others };
}
