/**
 * Model-based paths of the agent statechart, driven through the actor host.
 *
 * A path (tests/helpers/machine-paths.ts) is a list of machine events. Here
 * each one is turned into what makes the host produce it (`translate`) and
 * then played (`runHostScenario`) against the real parts: `buildGatehouse`
 * (what createGatehouse runs) over the memory store, its HTTP routes, its
 * watchdog, and claims run by `claimRunner` (what the worker pool and the
 * Workers handler run), each claim with a budget of one step, so the host
 * hands the agent back at every step boundary and the path can act between
 * two steps. How each event is produced:
 *
 * | event                          | produced by                                            |
 * | TASK_STARTED                   | a task over `POST /tasks`, then a claim                 |
 * | MODEL_STEP                     | the scripted model's answer for (turn, step)           |
 * | MODEL_FAILED                   | the model throwing a retryable ModelError past         |
 * |                                |   `modelAttempts` (2)                                  |
 * | TOOL_RESULT, in-process call   | the tool's `execute` (returns a value, or `terminate`) |
 * | TOOL_RESULT, external call     | `POST /tool-results` (continue or terminate), or the   |
 * |                                |   watchdog timing out `fetch_ext` (deadline 1 s; the   |
 * |                                |   clock is moved to it and the watchdog ticks)         |
 * | VERIFY_PASSED / _REJECTED      | `output.verify` returning / throwing                   |
 * |                                |   VerificationRejected (retryable or not)              |
 * | VERIFY_ERROR                   | `output.verify` throwing an Error; the retry waits for |
 * |                                |   `retryAt`, read from the store's ready time          |
 * | FEEDBACK_APPENDED,             | the host itself                                        |
 * |   STEP_BUDGET_EXHAUSTED        |                                                        |
 * | CANCEL                         | `POST /cancel`, then a claim; right after TASK_STARTED |
 * |                                |   the first claim of the turn fails once (its commit   |
 * |                                |   throws, below maxClaimFailures) so the turn is       |
 * |                                |   active, uncommitted, when the cancel arrives         |
 * | TURN_FAILED, `reset`           | `POST /reset`                                          |
 * | TURN_FAILED, `claim_error`     | claims whose commit throws, maxClaimFailures (2) times |
 * |                                |   (of the running turn, or of a new task from idle,    |
 * |                                |   done or failed: the turn never started)              |
 *
 * The calls of one model step are in-process when the path's results come
 * in call order with nothing in between (the host runs them as one batch),
 * else external; `translate(walk, true)` makes every call external.
 *
 * Path shapes the host cannot produce (translate answers null): an event
 * the host decides for itself differently at that point (MODEL_FAILED once
 * the steps are spent: the host ends the turn with STEP_BUDGET_EXHAUSTED),
 * and a reset or claim failure right after a transition that the same claim
 * follows with an effect (TASK_STARTED, FEEDBACK_APPENDED, an external
 * result that leaves `waiting-tools`): the host commits that transition
 * together with the next step, so no stored version sits between them.
 *
 * Checked after every write of a snapshot (each `commit`, `resetTurn` and
 * `recordClaimFailure` the host and routes make, seen by wrapping the store):
 * - the logged `transition` events replay through the pure machine from its
 *   initial snapshot with the logged `from` and `to`, and the replay's
 *   persisted snapshot equals the stored one (and the head's state);
 * - the logged transitions, in order, are the path's: same event type and
 *   the same describeMachine() transition;
 * - while the log is within the path, the stored snapshot has what the path
 *   says in the fields the host does not choose itself (state, turns, step,
 *   config, number of pending calls, verification counters and candidate
 *   source, error reason, whether there is an output, steps used).
 * A failing check inside the host is recorded (not thrown, which the worker
 * would count as a claim failure) and fails the run at its next action.
 */
import { z } from "zod";
import { claimRunner } from "../../actors/pool/claim-runner.ts";
import { startDriveBudget } from "../../actors/claim/drive-budget.ts";
import { turnConfig } from "../../actors/host/inbox.ts";
import { buildGatehouse } from "../../gatehouse.ts";
import type { AnyAgent } from "../../agents/define.ts";
import type { StoredEvent } from "../../common/events.ts";
import type { AfterExecution } from "../../common/outcome.ts";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentContext, AgentEvent, TurnConfig } from "../../machines/types.ts";
import type { ModelResponse } from "../../models/types.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import type { InboxTask } from "../../store/types.ts";
import { defineAgent, defineTool, ModelError, scriptedModel, terminate, VerificationRejected } from "../../mod.ts";
import { manualClock } from "./clock.ts";
import { initialSnap, type Snap, step, takenBy, type Walk } from "./machine-paths.ts";

export type Mechanism =
  | "task route"
  | "model"
  | "host"
  | "verifier"
  | "in-process tool"
  | "delivery"
  | "watchdog timeout"
  | "cancel route"
  | "cancel after a failed claim"
  | "reset route"
  | "claim failures";

type Verdict = "pass" | "retry" | "final" | "error";

export interface HostScenario {
  /** The path in short: agent and events. */
  name: string;
  walk: Walk;
  agent: string;
  /** How each event of the walk is produced. */
  via: Mechanism[];
  /** The model's answer by `${turn}/${step}`; "fail": it throws. */
  model: Map<string, ModelResponse | "fail">;
  /** How each in-process call ends, by host call id. */
  tools: Map<string, AfterExecution>;
  /** The verifier's answers, in order. */
  verdicts: Verdict[];
  /** The calls of the path by `${turn}:${path call id}`. */
  calls: Map<string, { hostId: string; external: boolean; name: string }>;
  /** The turn number (1-based, tasks in enqueue order) each event belongs to. */
  turnAt: number[];
}

const Args = z.object({ result: z.string() });
const Out = z.object({ v: z.string() });
const AGENT_ID = "mbt";
const MAX_CLAIM_FAILURES = 2;
const WATCHDOG_TOOL_MS = 1_000;
const VERIFIER_BACKOFF_MS = 1_000;
const usage = { inputTokens: 3, outputTokens: 2 };

/** What the agents' model, tools and verifier read while a scenario runs. */
interface Live {
  scenario: HostScenario | null;
  /** Set while the scenario makes claims fail: commits throw, the verifier passes without using a planned answer. */
  poisoned: boolean;
  verdicts: Verdict[];
}

const turnNumber = (turnId: string) => Number(turnId.replace(/^turn_/, ""));

function agentsFor(live: Live): AnyAgent[] {
  const tool = (name: string, external: boolean, timeoutMs?: number) =>
    defineTool({
      name,
      description: `${name} (${external ? "external" : "in-process"})`,
      parameters: Args,
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(external ? {} : {
        execute: (args: { result: string }, ctx: { toolCallId: string }) => {
          const how = live.scenario?.tools.get(ctx.toolCallId) ?? "continue";
          return how === "terminate" ? terminate({ v: `t-${args.result}` }) : `r-${args.result}`;
        },
      }),
    });
  const tools = [tool("search", false), tool("fetch", false), tool("search_ext", true), tool("fetch_ext", true, WATCHDOG_TOOL_MS)];
  const model = scriptedModel((ctx) => {
    const r = live.scenario?.model.get(`${turnNumber(ctx.turnId)}/${ctx.step}`);
    if (r === "fail") throw new ModelError("The model is down", { retryable: true });
    // Steps past the end of the path (the host goes on until it hands back).
    return r ?? { text: "more", usage };
  });
  const common = { instructions: "work", model, tools, stepLimit: 2, modelAttempts: 2 };
  return [
    defineAgent({ name: "mbt_text", ...common }),
    defineAgent({ name: "mbt_must", ...common, mustEndWith: ["submit_result"] }),
    defineAgent({
      name: "mbt_output",
      ...common,
      output: {
        schema: Out,
        verify: (c: { v: string }) => {
          if (live.poisoned) return c;
          const v = live.verdicts.shift() ?? "pass";
          if (v === "pass") return { accepted: c.v };
          if (v === "error") throw new Error("The verifier's backend is down");
          throw new VerificationRejected({ message: `${c.v} is not it`, code: "nope", retryable: v === "retry" });
        },
      },
      verifyAttempts: 2,
      maxVerifierErrors: 2,
    }),
  ];
}

/** The turn config of each host agent (what TASK_STARTED carries for a task without options). */
export const HOST_CONFIGS: ReadonlyArray<{ agent: string; config: TurnConfig }> = agentsFor({
  scenario: null,
  poisoned: false,
  verdicts: [],
}).map((a) => ({ agent: a.name, config: turnConfig(a, { options: {} } as InboxTask) }));

const sameConfig = (a: TurnConfig, b: TurnConfig) => JSON.stringify(a) === JSON.stringify(b);
const IN_TURN = new Set(["running", "waiting-tools", "verifying", "revising"]);

/**
 * The events the host paths are built from: those of the pure paths, with
 * the payloads one agent can be given (a second task runs with the same
 * agent, so with its config) and the TURN_FAILED the host can produce: from
 * idle, done and failed a new turn whose claims fail; within a turn that
 * turn, reset (running, waiting-tools) or failing its claims (verifying,
 * revising).
 */
export function hostEventsFor(s: Snap): AgentEvent[] {
  const ctx = s.context;
  const value = String(s.value);
  const turnId = ctx.turnId ?? "none";
  const stop = (): AgentEvent[] => [
    { type: "CANCEL", at: 6, reason: "stop" },
    {
      type: "TURN_FAILED", at: 5, turnId,
      reason: value === "running" || value === "waiting-tools" ? "reset" : "claim_error", message: "ended",
    },
  ];
  const step = (text: string | null, calls: string[]): AgentEvent => ({
    type: "MODEL_STEP",
    at: 1000 + ctx.step,
    text,
    toolCalls: calls.map((name) => ({ id: `${name[0]}-${ctx.step}`, name, args: {}, external: false, deadline: 0 })),
    usage,
    cost: 0,
  });
  switch (value) {
    case "idle":
    case "done":
    case "failed": {
      const bound = HOST_CONFIGS.filter((c) => sameConfig(c.config, ctx.config));
      return [
        ...(bound.length > 0 ? bound : HOST_CONFIGS).map((c): AgentEvent => ({
          type: "TASK_STARTED", at: 10, turnId: `${c.agent}-${ctx.turns + 1}`, input: "task", config: c.config,
        })),
        { type: "TURN_FAILED", at: 5, turnId: `new-${ctx.turns + 1}`, reason: "claim_error", message: "claims fail" },
      ];
    }
    case "running":
      if (ctx.step >= ctx.config.maxSteps) return [{ type: "STEP_BUDGET_EXHAUSTED", at: 20 }, ...stop()];
      return [
        step("thinking", []),
        step("", []),
        step(null, ["search"]),
        step(null, ["search", "fetch"]),
        step(null, [ctx.config.completion]),
        { type: "MODEL_FAILED", at: 21, message: "The model is down" },
        ...stop(),
      ];
    case "waiting-tools":
      return [
        ...Object.keys(ctx.pending).flatMap((id): AgentEvent[] =>
          (["continue", "terminate"] as const).map((afterExecution) => ({
            type: "TOOL_RESULT", at: 30, toolCallId: id, outcome: { ok: true, value: id }, afterExecution,
          }))
        ),
        ...stop(),
      ];
    case "verifying": {
      const hash = `h${ctx.verification.attemptsUsed}`;
      return [
        { type: "VERIFY_PASSED", at: 40, hash, result: { ok: 1 } },
        { type: "VERIFY_REJECTED", at: 41, hash, code: "bad", message: "try again", retryable: true },
        { type: "VERIFY_REJECTED", at: 42, hash, code: "no", message: "never", retryable: false },
        { type: "VERIFY_ERROR", at: 43, message: "verifier down", retryAt: 99 },
        ...stop(),
      ];
    }
    case "revising":
      return [{ type: "FEEDBACK_APPENDED", at: 50 }, ...stop()];
    default:
      throw new Error(`no events for state ${value}`);
  }
}

/** The calls of a model step run in-process when the path's results come in call order, nothing in between. */
function inProcessFits(w: Walk, i: number): boolean {
  const e = w.events[i] as Extract<AgentEvent, { type: "MODEL_STEP" }>;
  let k = 0;
  for (let j = i + 1; j < w.events.length && w.snaps[j].value === "waiting-tools"; j++) {
    const r = w.events[j];
    if (r.type !== "TOOL_RESULT") return k === 0; // cancel or turn end before any result: the batch never ran
    if (r.toolCallId !== e.toolCalls[k]?.id) return false;
    k++;
  }
  return true;
}

const short = (e: AgentEvent, s: Snap): string => {
  switch (e.type) {
    case "MODEL_STEP":
      return e.toolCalls.length ? `step(${e.toolCalls.map((c) => c.name).join("+")})` : `step(text)`;
    case "TOOL_RESULT":
      return `result(${String(s.context.pending[e.toolCallId]?.name)},${e.afterExecution})`;
    case "VERIFY_REJECTED":
      return e.retryable ? "rejected(retry)" : "rejected(final)";
    case "TURN_FAILED":
      return `turn_failed(${e.reason})`;
    default:
      return e.type.toLowerCase();
  }
};

/** How the host is made to take the walk's events, or null when it cannot take them in this order (see the header). */
export function translate(w: Walk, allExternal = false): HostScenario | null {
  const sc: HostScenario = {
    name: "", walk: w, agent: "", via: [], model: new Map(), tools: new Map(), verdicts: [], calls: new Map(), turnAt: [],
  };
  let turn = 0;
  let agent: string | null = null;
  const names: string[] = [];
  for (let i = 0; i < w.events.length; i++) {
    const e = w.events[i];
    const pre = w.snaps[i];
    const post = w.snaps[i + 1];
    const next = w.events[i + 1];
    const ctx = pre.context as AgentContext;
    names.push(short(e, pre));
    switch (e.type) {
      case "TASK_STARTED": {
        turn++;
        const name = HOST_CONFIGS.find((c) => sameConfig(c.config, e.config))?.agent;
        if (!name || (agent !== null && agent !== name)) return null;
        agent = name;
        // Committed together with the first step: no stored version to reset in between.
        if (next?.type === "TURN_FAILED") return null;
        sc.via.push("task route");
        break;
      }
      case "TURN_FAILED":
        if (!IN_TURN.has(String(pre.value))) {
          turn++;
          if (e.reason !== "claim_error") return null;
          sc.via.push("claim failures");
        } else {
          if (e.turnId !== ctx.turnId) return null;
          sc.via.push(e.reason === "reset" ? "reset route" : "claim failures");
        }
        break;
      case "CANCEL":
        sc.via.push(w.events[i - 1]?.type === "TASK_STARTED" ? "cancel after a failed claim" : "cancel route");
        break;
      case "MODEL_STEP": {
        if (ctx.step >= ctx.config.maxSteps) return null;
        const n = ctx.step + 1;
        const completion = ctx.config.completion;
        const external = e.toolCalls.some((c) => c.name !== completion) && (allExternal || !inProcessFits(w, i));
        const toolCalls = e.toolCalls.map((c) => {
          const hostId = `${c.id}.t${turn}`;
          if (c.name === completion) {
            return { id: hostId, name: c.name, args: completion === "agent_output" ? { v: `v${turn}-${n}` } : { result: `r${turn}` } };
          }
          sc.calls.set(`${turn}:${c.id}`, { hostId, external, name: c.name });
          return { id: hostId, name: external ? `${c.name}_ext` : c.name, args: { result: c.id } };
        });
        sc.model.set(`${turn}/${n}`, toolCalls.length > 0 ? { toolCalls, usage } : { text: e.text ?? "", usage });
        sc.via.push("model");
        break;
      }
      case "MODEL_FAILED":
        // Once the steps are spent the host ends the turn with STEP_BUDGET_EXHAUSTED instead of asking the model.
        if (ctx.step >= ctx.config.maxSteps) return null;
        sc.model.set(`${turn}/${ctx.step + 1}`, "fail");
        sc.via.push("model");
        break;
      case "TOOL_RESULT": {
        const call = sc.calls.get(`${turn}:${e.toolCallId}`);
        if (!call) throw new Error(`path result for unknown call ${e.toolCallId}`);
        if (!call.external) {
          sc.tools.set(call.hostId, e.afterExecution);
          sc.via.push("in-process tool");
          break;
        }
        // The claim that applies this result goes on with the next step in the same commit.
        const busy = post.value === "running" || post.value === "verifying";
        if (busy && next?.type === "TURN_FAILED") return null;
        sc.via.push(call.name === "fetch" && e.afterExecution === "continue" ? "watchdog timeout" : "delivery");
        break;
      }
      case "VERIFY_PASSED":
      case "VERIFY_REJECTED":
      case "VERIFY_ERROR":
        sc.verdicts.push(
          e.type === "VERIFY_PASSED" ? "pass" : e.type === "VERIFY_ERROR" ? "error" : e.retryable ? "retry" : "final",
        );
        sc.via.push("verifier");
        break;
      case "FEEDBACK_APPENDED":
        // Committed together with the next model step.
        if (next?.type === "CANCEL" || next?.type === "TURN_FAILED") return null;
        sc.via.push("host");
        break;
      case "STEP_BUDGET_EXHAUSTED":
        sc.via.push("host");
        break;
    }
    sc.turnAt.push(turn);
  }
  sc.agent = agent ?? HOST_CONFIGS[0].agent;
  sc.name = `${sc.agent}${allExternal ? " (external)" : ""}: ${names.join(" ")}`;
  return sc;
}

export interface HostRun {
  /** Writes of a snapshot checked (commits, resets, recorded claim failures). */
  checks: number;
  /** describeMachine() key and mechanism of each path transition the host logged. */
  taken: Array<{ key: string; via: Mechanism }>;
  claims: number;
  /** Claims that waited for a verifier retry: the clock was moved to the `retryAt` the store had as ready time. */
  retriesWaited: number;
  /** The agent's event log at the end of the run. */
  events: StoredEvent[];
}

type LoggedTransition = { from: string; to: string; event: AgentEvent };

/** The fields of a snapshot the path fixes (the host picks ids, times, hashes, texts and usage itself). */
function projection(value: unknown, c: AgentContext) {
  return {
    value,
    turns: c.turns,
    step: c.step,
    config: c.config,
    pending: Object.keys(c.pending).length,
    attemptsUsed: c.verification.attemptsUsed,
    maxAttempts: c.verification.maxAttempts,
    systemErrors: c.verification.systemErrors,
    lastOutcome: c.verification.lastOutcome,
    candidate: c.verification.candidate?.from ?? null,
    retryAt: c.verification.retryAt !== null,
    error: c.error?.reason ?? null,
    output: c.output !== null,
    stepsUsed: c.turnUsage.steps,
  };
}

/** Plays one scenario through the host; throws at the first difference from the path. */
export async function runHostScenario(sc: HostScenario): Promise<HostRun> {
  const { events: path, snaps, keys } = sc.walk;
  const live: Live = { scenario: sc, poisoned: false, verdicts: [...sc.verdicts] };
  const base = memoryStore();
  const clock = manualClock();
  const failures: string[] = [];
  const taken = new Map<number, { key: string; via: Mechanism }>();
  let checks = 0;

  const transitions = async (): Promise<LoggedTransition[]> =>
    (await base.getAgent(AGENT_ID))
      ? (await base.readEvents(AGENT_ID, 0, 10_000)).filter((e) => e.type === "transition").map((e) => e.data as unknown as LoggedTransition)
      : [];

  async function check(after: string): Promise<void> {
    try {
      const head = await base.getAgent(AGENT_ID);
      if (!head) throw new Error("no agent after a write");
      const logged = await transitions();
      let s = initialSnap();
      for (const [k, t] of logged.entries()) {
        if (t.from !== s.value) throw new Error(`transition ${k + 1} is logged from ${t.from}, the replay is in ${String(s.value)}`);
        const key = takenBy(s, t.event);
        if (key === null) throw new Error(`transition ${k + 1} (${t.event.type}) takes no transition in the replay`);
        s = step(s, t.event);
        if (t.to !== s.value) throw new Error(`transition ${k + 1} is logged to ${t.to}, the replay went to ${String(s.value)}`);
        if (k < path.length) {
          if (t.event.type !== path[k].type || key !== keys[k]) {
            throw new Error(`transition ${k + 1}: the host took ${t.event.type} "${key}", the path ${path[k].type} "${keys[k]}"`);
          }
          taken.set(k, { key, via: sc.via[k] });
        }
      }
      // An agent whose first turn never committed has no snapshot yet: it is the initial one.
      if (head.snapshot === null && logged.length > 0) throw new Error(`no stored snapshot after ${logged.length} transitions`);
      const replayed = JSON.parse(JSON.stringify(agentMachine.getPersistedSnapshot(s as never)));
      if (JSON.stringify(replayed) !== JSON.stringify(head.snapshot ?? replayed)) {
        throw new Error(`stored snapshot differs from the replay:\n${JSON.stringify(head.snapshot)}\n${JSON.stringify(replayed)}`);
      }
      // A claim stores a new turn's state before its first commit stores anything of it (store/port.ts invariant
      // `turn-start`): the head then says `running` for a turn the replayed snapshot does not hold yet.
      const startedOnHead = head.state === "running" && head.activeTurnId !== null && (s.context as AgentContext).turnId !== head.activeTurnId;
      if (head.state !== s.value && !startedOnHead) throw new Error(`head state ${head.state}, replay ${String(s.value)}`);
      if (logged.length <= path.length) {
        const want = JSON.stringify(projection(snaps[logged.length].value, snaps[logged.length].context as AgentContext));
        const got = JSON.stringify(projection(s.value, s.context as AgentContext));
        if (want !== got) throw new Error(`after ${logged.length} transitions the stored snapshot has\n${got}\nthe path\n${want}`);
      }
      checks++;
    } catch (err) {
      failures.push(`after ${after}: ${(err as Error).message}`);
    }
  }

  const store = new Proxy(base, {
    get(target, p, receiver) {
      const v = Reflect.get(target, p, receiver);
      if (typeof v !== "function") return v;
      if (p === "commit") {
        return async (...args: unknown[]) => {
          if (live.poisoned) throw new Error("Cannot commit: this claim is made to fail");
          const r = await v.apply(target, args);
          if (r.status === "applied") await check("a commit");
          return r;
        };
      }
      if (p === "resetTurn" || p === "recordClaimFailure") {
        return async (...args: unknown[]) => {
          const r = await v.apply(target, args);
          await check(String(p));
          return r;
        };
      }
      return (...args: unknown[]) => v.apply(target, args);
    },
  }) as Store;

  let turns = 0;
  const built = buildGatehouse({
    agents: agentsFor(live),
    store,
    clock,
    ids: { turnId: () => `turn_${++turns}`, workerId: () => "w_mbt" },
    maxClaimFailures: MAX_CLAIM_FAILURES,
    claimRetryBackoffMs: 0,
    verifierBackoffMs: VERIFIER_BACKOFF_MS,
  });
  const gh = built.gatehouse;
  const deps = built.deps;
  const target = built.targets[0];
  const runner = claimRunner(deps);
  let claims = 0;
  let retriesWaited = 0;

  async function post(path: string, body: unknown): Promise<void> {
    const res = await gh.fetch(new Request(`http://gatehouse/v1/agents/${AGENT_ID}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }));
    if (res.status !== 200 && res.status !== 202) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
  }

  async function claim(): Promise<void> {
    const req = () => ({ workerTarget: target, workerId: "w_mbt", leaseMs: deps.leaseMs, now: clock.now() });
    let c = await deps.store.claimNext(req());
    if (c.status !== "claimed") {
      // Not due yet: a verifier retry waits for `retryAt`, which the store keeps as the agent's ready time.
      const at = await deps.store.nextReadyAt(target);
      const head = await base.getAgent(AGENT_ID);
      const v = (head?.snapshot as { context?: AgentContext } | null)?.context?.verification;
      const retryAt = v?.retryAt ?? null;
      if (at === null || at <= clock.now() || head?.state !== "verifying" || retryAt !== at) {
        throw new Error(`nothing to claim (ready at ${at}, now ${clock.now()}, state ${head?.state}, retryAt ${retryAt})`);
      }
      // The backoff doubles per system error of the candidate: 1 s after the first (verifierBackoffMs).
      if (at - v!.lastAttemptAt! !== VERIFIER_BACKOFF_MS * 2 ** (v!.systemErrors - 1)) {
        throw new Error(`retry ${at - v!.lastAttemptAt!} ms after system error ${v!.systemErrors}`);
      }
      clock.set(at);
      retriesWaited++;
      c = await deps.store.claimNext(req());
    }
    if (c.status !== "claimed") throw new Error(`claim answered ${c.status}`);
    claims++;
    await runner.run(c, "w_mbt", startDriveBudget({ steps: 1, ms: 1e12 }, clock));
  }

  async function failClaims(times: number): Promise<void> {
    live.poisoned = true;
    try {
      for (let f = 0; f < times; f++) await claim();
    } finally {
      live.poisoned = false;
    }
  }

  let enqueued = 0;
  const enqueue = async () => {
    enqueued++;
    await post("/tasks", { agent: sc.agent, input: "task" });
  };
  const turnIdOf = (i: number) => `turn_${sc.turnAt[i]}`;

  try {
    await play();
  } finally {
    await gh.close();
  }
  if (failures.length > 0) throw new Error(`${sc.name}\n${failures[0]}`);
  if (taken.size !== path.length) throw new Error(`${sc.name}: ${taken.size} of ${path.length} transitions checked`);
  const events = (await base.getAgent(AGENT_ID)) ? await base.readEvents(AGENT_ID, 0, 100_000) : [];
  return { checks, taken: [...taken.values()], claims, retriesWaited, events };

  async function play(): Promise<void> {
    for (let guard = 0;; guard++) {
      if (failures.length > 0) throw new Error(`${sc.name}\n${failures[0]}`);
      const logged = await transitions();
      if (logged.length >= path.length) break;
      if (guard > 4 * path.length + 4) throw new Error(`${sc.name}: no progress`);
      const i = logged.length;
      const e = path[i];
      const next = path[i + 1];
      try {
        switch (e.type) {
          case "TASK_STARTED":
            if (enqueued < sc.turnAt[i]) {
              await enqueue();
              if (next?.type === "CANCEL") {
                await failClaims(1);
                await post("/cancel", { reason: "stop" });
              }
            }
            await claim();
            break;
          case "TURN_FAILED":
            if (sc.via[i] === "reset route") await post("/reset", { reason: "ended" });
            else {
              if (!IN_TURN.has(String(snaps[i].value))) await enqueue();
              await failClaims(MAX_CLAIM_FAILURES);
            }
            break;
          case "CANCEL":
            await post("/cancel", { reason: "stop" });
            await claim();
            break;
          case "TOOL_RESULT": {
            const how = sc.via[i];
            if (how === "delivery") {
              const call = sc.calls.get(`${sc.turnAt[i]}:${e.toolCallId}`)!;
              const value = e.afterExecution === "terminate" ? { v: `t-${e.toolCallId}` } : `r-${e.toolCallId}`;
              await post("/tool-results", {
                turnId: turnIdOf(i), toolCallId: call.hostId, outcome: { ok: true, value }, afterExecution: e.afterExecution,
              });
            } else if (how === "watchdog timeout") {
              const call = sc.calls.get(`${sc.turnAt[i]}:${e.toolCallId}`)!;
              const head = await base.getAgent(AGENT_ID);
              const deadline = (head!.snapshot as { context: AgentContext }).context.pending[call.hostId].deadline;
              clock.set(Math.max(clock.now(), deadline));
              const r = await gh.tick();
              if (r.timedOut !== 1) throw new Error(`the watchdog timed out ${r.timedOut} calls`);
            }
            // A cancel that follows is mailed with the result, so the claim that applies one applies both.
            if (how !== "in-process tool" && next?.type === "CANCEL") await post("/cancel", { reason: "stop" });
            await claim();
            break;
          }
          default:
            await claim();
        }
      } catch (err) {
        throw new Error(`${sc.name}\nat event ${i + 1} (${e.type}): ${(err as Error).message}`);
      }
      if ((await transitions()).length <= i && failures.length === 0) {
        throw new Error(`${sc.name}\nthe host did not take event ${i + 1} (${e.type}, ${keys[i]})`);
      }
    }
  }
}
