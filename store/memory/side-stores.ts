/**
 * The side stores of the memory store (store/port.ts `SideStores`): verdicts, delivery
 * dedup, rate limits, target leases, the tool registry, forks, definition sets.
 * Each operation is a top-level function of the store's MemoryState;
 * store/memory.ts binds them to the store object.
 */
import type { AnnounceDefinitionSetRequest, ClaimDeliveryRequest, ClaimDeliveryResult, CreateForkRequest, CreateForkResult, DefinitionSetRecord, RateLimitRequest, RateLimitResult, RecordDeliveryRequest, RecordForkRequest, RecordToolMethodRequest, RecordToolMethodResult, RenewDeliveryRequest, SettleDeliveryResult, SideStores, TargetLeaseRequest, TargetLeaseResult, VerdictFilter, VerdictPut } from "../port.ts";
import type { ToolCallRecord } from "../types.ts";
import { definitionSetRecord, definitionSetText } from "../definition-set-form.ts";
import { checkAgentName, checkHolder, checkTarget, checkToolName, StoreInputError, toolCalls } from "../keys.ts";
import { gcraArgs } from "../rate-limit.ts";
import { loadToolRoleEntry, methodForm, type ToolRoleEntry } from "../../common/tool-registry.ts";
import { callKey, deliveryRef, freshAgent, int } from "./records.ts";
import type { MemoryState } from "./state.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof SideStores> = ReturnType<NonNullable<SideStores[K]>>;

export async function putVerdict(s: MemoryState, req: VerdictPut): Ret<"putVerdict"> {
  const { agents, verdicts, atomic, w } = s;
  return atomic(() => {
    if (verdicts.has(req.verdictId)) return { status: "exists" as const };
    const a = agents.get(req.agentId);
    const rec = { agentId: String(req.agentId), turnId: String(req.turnId), status: String(req.status), json: String(req.json) };
    w.mapSet(verdicts, req.verdictId, rec);
    if (a) w.push(a.verdicts, req.verdictId);
    return { status: "written" as const };
  });
}

export async function getVerdict(s: MemoryState, verdictId: string): Ret<"getVerdict"> {
  const { verdicts } = s;
  return verdicts.get(verdictId)?.json ?? null;
}

export async function listVerdicts(s: MemoryState, agentId: string, filter: VerdictFilter): Ret<"listVerdicts"> {
  const { agents, verdicts } = s;
  const a = agents.get(agentId);
  if (!a) return [];
  return a.verdicts
    .map((id) => verdicts.get(id)!)
    .filter((v) => (filter.turnId === undefined || v.turnId === filter.turnId) &&
      (filter.status === undefined || v.status === filter.status))
    .map((v) => v.json);
}

export async function claimDelivery(s: MemoryState, req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult> {
  const { deliveries, liveDelivery, purgeDeliveries } = s;
  const { messageId, target, holder, now } = deliveryRef(req);
  const windowMs = int(req.windowMs, "windowMs");
  const holdMs = int(req.holdMs, "holdMs");
  const cur = liveDelivery(messageId, now);
  if (cur === null) {
    purgeDeliveries(now);
    deliveries.set(messageId, { until: now + windowMs, holdUntil: now + holdMs, holder, target, response: null });
    return { status: "fresh" };
  }
  if (cur.target !== target) return { status: "other_target" };
  if (cur.response !== null) return { status: "answered", response: structuredClone(cur.response) };
  if (cur.holder !== "" && cur.holdUntil > now) return { status: "in_progress", holdUntil: cur.holdUntil };
  deliveries.set(messageId, { ...cur, holder, holdUntil: now + holdMs });
  return { status: "fresh" };
}

export async function renewDelivery(s: MemoryState, req: RenewDeliveryRequest): Promise<SettleDeliveryResult> {
  const { deliveries, liveDelivery } = s;
  const { messageId, target, holder, now } = deliveryRef(req);
  const holdMs = int(req.holdMs, "holdMs");
  const cur = liveDelivery(messageId, now);
  if (cur === null || cur.target !== target || cur.holder !== holder || cur.response !== null) return { status: "lost" };
  deliveries.set(messageId, { ...cur, holdUntil: now + holdMs });
  return { status: "renewed" };
}

export async function recordDelivery(s: MemoryState, req: RecordDeliveryRequest): Promise<SettleDeliveryResult> {
  const { deliveries, liveDelivery } = s;
  const { messageId, target, holder, now } = deliveryRef(req);
  const windowMs = int(req.windowMs, "windowMs");
  const cur = liveDelivery(messageId, now);
  if (cur === null || cur.target !== target || cur.holder !== holder || cur.response !== null) return { status: "lost" };
  if (req.response === null) deliveries.set(messageId, { ...cur, holder: "", holdUntil: 0 });
  else {
    const response = { status: int(req.response.status, "status"), contentType: String(req.response.contentType), body: String(req.response.body) };
    deliveries.set(messageId, { ...cur, holder: "", holdUntil: 0, until: Math.max(cur.until, now + windowMs), response });
  }
  return { status: "written" };
}

export async function rateLimit(s: MemoryState, req: RateLimitRequest): Promise<RateLimitResult> {
  const { buckets } = s;
  const now = int(req.now, "now");
  const { intervals, tolerances } = gcraArgs(req.buckets);
  const nowUs = now * 1000;
  const next: number[] = [];
  let worst = -1;
  let worstWait = 0;
  req.buckets.forEach((b, i) => {
    const tat = Math.max(buckets.get(b.key) ?? 0, nowUs) + Number(intervals[i]);
    const wait = tat - Number(tolerances[i]) - nowUs;
    if (wait > worstWait) {
      worstWait = wait;
      worst = i;
    }
    next.push(tat);
  });
  if (worst >= 0) return { status: "limited", bucket: worst, retryAfterMs: Math.ceil(worstWait / 1000) };
  req.buckets.forEach((b, i) => buckets.set(b.key, next[i]));
  // Past TATs limit nothing: drop them now and then (Redis expires them itself).
  if (buckets.size > 10_000) for (const [k, t] of buckets) if (t <= nowUs) buckets.delete(k);
  return { status: "allowed" };
}

export async function acquireTargetLease(s: MemoryState, req: TargetLeaseRequest): Promise<TargetLeaseResult> {
  const { targetLeases } = s;
  checkTarget(req.workerTarget);
  checkHolder(req.holder);
  const now = int(req.now, "now");
  const leaseMs = int(req.leaseMs, "leaseMs");
  if (leaseMs < 1) throw new StoreInputError(`leaseMs must be at least 1, got ${leaseMs}`);
  const cur = targetLeases.get(req.workerTarget);
  if (cur && cur.until > now && cur.holder !== req.holder) return { status: "busy", holder: cur.holder, leaseUntil: cur.until };
  targetLeases.set(req.workerTarget, { holder: req.holder, until: now + leaseMs });
  return { status: "held", leaseUntil: now + leaseMs };
}

export async function releaseTargetLease(s: MemoryState, req: Omit<TargetLeaseRequest, "leaseMs">): Ret<"releaseTargetLease"> {
  const { targetLeases } = s;
  checkTarget(req.workerTarget);
  checkHolder(req.holder);
  const now = int(req.now, "now");
  const cur = targetLeases.get(req.workerTarget);
  if (!cur || cur.until <= now || cur.holder !== req.holder) return { status: "not_held" as const };
  targetLeases.delete(req.workerTarget);
  return { status: "released" as const };
}

export async function recordToolMethod(s: MemoryState, req: RecordToolMethodRequest): Promise<RecordToolMethodResult> {
  const { tools, toolForms, atomic, copy, w } = s;
  return atomic(() => {
    checkToolName(req.role, "role");
    checkToolName(req.method, "method");
    if (!Number.isSafeInteger(req.now)) throw new StoreInputError(`now must be an integer (ms), got ${req.now}`);
    const n = toolCalls(req.calls);
    const raw = tools.get(req.role);
    const stored = raw && typeof raw === "object" && !Array.isArray(raw) ? copy(raw as Record<string, unknown>) : {};
    const methods = Array.isArray(stored.methods) ? stored.methods as unknown[] : [];
    const aliases = Array.isArray(stored.aliases) ? stored.aliases as unknown[] : [];
    const formKey = `${req.role}\n${methodForm(req.method)}`;
    const canonical = toolForms.get(formKey);
    let added: RecordToolMethodResult["added"] = "none";
    if (canonical === undefined) {
      if (!methods.includes(req.method)) added = "method";
    } else if (canonical !== req.method) {
      if (!aliases.some((a) => (a as { alias?: unknown })?.alias === req.method)) added = "alias";
    }
    const entry = {
      ...stored,
      methods: added === "method" ? [...methods, req.method] : methods,
      aliases: added === "alias" ? [...aliases, { alias: req.method, method: canonical }] : aliases,
      role: req.role,
      calls: (typeof stored.calls === "number" && Number.isFinite(stored.calls) ? stored.calls : 0) + n,
      createdAt: typeof stored.createdAt === "number" ? stored.createdAt : req.now,
      updatedAt: req.now,
    };
    // Writes.
    if (canonical === undefined) w.mapSet(toolForms, formKey, req.method);
    w.mapSet(tools, req.role, entry);
    return { status: "recorded" as const, added, entry: loadToolRoleEntry(req.role, copy(entry))! };
  });
}

export async function getToolRole(s: MemoryState, role: string): Promise<ToolRoleEntry | null> {
  const { tools, copy } = s;
  checkToolName(role, "role");
  return tools.has(role) ? loadToolRoleEntry(role, copy(tools.get(role))) : null;
}

export async function listToolRoles(s: MemoryState): Promise<ToolRoleEntry[]> {
  const { tools, copy } = s;
  return [...tools.keys()].sort().flatMap((role) => loadToolRoleEntry(role, copy(tools.get(role))) ?? []);
}

export async function createFork(s: MemoryState, req: CreateForkRequest): Promise<CreateForkResult> {
  const { agents, deadlines, atomic, copy, w, setReady, eventOf, appendEvents } = s;
  return atomic(() => {
    if (agents.has(req.agentId)) return { status: "exists" };
    const turn = req.activeTurnId;
    // Copies first.
    const snapshot = copy(req.snapshot);
    const currentTask = copy(req.currentTask);
    const input = turn !== null && req.input !== undefined ? copy(req.input) : undefined;
    const messages = copy(req.messages);
    const calls = turn === null ? [] : req.toolCalls.map((c): ToolCallRecord => ({
      ...copy(c), turnId: turn, agentId: req.agentId, status: "pending", recordedAt: req.now,
    }));
    const data = copy(req.event.data);
    const a = freshAgent(req.agentId, req.agentName, req.workerTarget, req.now);
    Object.assign(a.head, { activeTurnId: turn, currentTask, snapshot, state: req.state, runnableAt: req.runnableAt, messageCount: messages.length });
    a.messages = messages;
    a.toolCalls = new Map(calls.map((c) => [callKey(c.turnId, c.toolCallId), c]));
    a.inputs = new Map(input !== undefined && turn !== null ? [[turn, input]] : []);
    const ev = eventOf(a, 1, turn, req.event.type, data, req.now);
    // Writes.
    w.mapSet(agents, req.agentId, a);
    appendEvents(a, [ev]);
    for (const c of calls) w.mapSet(deadlines, `${req.agentId}\n${c.turnId}\n${c.toolCallId}`, c.deadline);
    if (req.runnableAt !== null) setReady(a, req.runnableAt);
    return { status: "created", lastEventId: a.head.lastEventId };
  });
}

export async function recordFork(s: MemoryState, req: RecordForkRequest): Ret<"recordFork"> {
  const { agents, atomic, copy, eventOf, appendEvents } = s;
  return atomic(() => {
    const a = agents.get(req.agentId);
    if (!a) return { status: "agent_not_found" as const };
    const ev = eventOf(a, 1, null, req.event.type, copy(req.event.data), req.now);
    appendEvents(a, [ev]);
    return { status: "recorded" as const, eventId: a.head.lastEventId };
  });
}

export async function announceDefinitionSet(s: MemoryState, req: AnnounceDefinitionSetRequest): Ret<"announceDefinitionSet"> {
  const { definitionSets } = s;
  const own = definitionSetText(req);
  if (req.withdraw) definitionSets.delete(own);
  else definitionSets.set(own, req.now);
  const others: DefinitionSetRecord[] = [];
  for (const [set, at] of [...definitionSets]) {
    if (at < req.now - req.ttlMs) definitionSets.delete(set);
    else if (set !== own) others.push(definitionSetRecord(set, at));
  }
  return { others };
}
