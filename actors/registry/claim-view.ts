/**
 * The host's view of the tool registry for one claim: records successful
 * calls (store/port.ts `recordToolMethod`, atomic in every store) and
 * renders the `<known_tools>` block of the model's system message
 * (contracts/registry.ts).
 *
 * - A call is recorded under its tool's role (default: the tool's name) with
 *   the tool's name as the method. Only successful calls count: an error
 *   outcome (a contract violation included) records nothing.
 * - With the process's registry writer (actors/registry/writer.ts, HostDeps
 *   `registryWriter`), the first call of a (role, method) in the process is
 *   written at once and later ones are counted in memory and flushed in
 *   batches: no store call on the step path once a method is known to the
 *   process. The entry's methods and aliases (and so `<known_tools>`) are
 *   exact; only `calls` lags, by at most the writer's flush interval.
 *   Without a writer every call is written at once.
 * - When a call adds a method or an alias that overlaps another method of
 *   the same role, an `interface_overlap` event is logged on the calling
 *   agent: `{ role, method, overlaps: [{ methods, kind }], hint }`. Nothing
 *   is renamed; the model sees the hint in `<known_tools>`.
 * - The block is shown to an agent with `knownTools: true`, by default to
 *   one whose tools declare a `role`, `deliverable` or `resultRequired`
 *   (agents/define.ts); others keep the instructions alone as their system
 *   message. The registry is read at most once per claim, for an agent that
 *   shows the block; the claim's own recordings update that copy.
 * - Registry failures are logged (`tool_registry_failed`) and never fail the
 *   turn: the registry observes, it does not decide.
 */
import type { AnyAgent } from "../../agents/define.ts";
import type { ToolRoleEntry } from "../../common/tool-registry.ts";
import { knownToolsBlock, overlapsWith } from "../../contracts/registry.ts";
import type { Store } from "../../store/port.ts";
import type { RegistryWriter } from "./writer.ts";
import type { Clock, Logger } from "../runtime.ts";

export interface ToolRegistryView {
  /** Records a successful call of the agent's tool `name`; logs `interface_overlap` through `emit` when it adds an overlap. */
  record(name: string, emit: (type: string, data: Record<string, unknown>) => void): Promise<void>;
  /** The `<known_tools>` block for the agent ("" when there is nothing to show). */
  knownTools(): Promise<string>;
}

export function createToolRegistryView(
  deps: { store: Store; agent: AnyAgent; clock: Clock; logger: Logger; agentId: string; writer?: RegistryWriter },
): ToolRegistryView {
  const { store, agent, logger, agentId } = deps;
  let entries: Map<string, ToolRoleEntry> | null = null;
  const roleOf = (name: string) => {
    const t = agent.tools.find((x) => x.name === name);
    return t ? t.role ?? t.name : null;
  };
  return {
    async record(name, emit) {
      const role = roleOf(name);
      if (role === null) return;
      try {
        const r = deps.writer ? await deps.writer.record(role, name) : await store.recordToolMethod({ role, method: name, now: deps.clock.now() });
        // null: counted by the writer; this process wrote the method before, so the copy lists it already.
        if (r === null) return;
        entries?.set(role, r.entry);
        if (r.added === "none") return;
        const overlaps = overlapsWith(r.entry, name);
        if (overlaps.length === 0) return;
        emit("interface_overlap", {
          role, method: name,
          overlaps: overlaps.map((o) => ({ methods: o.methods, kind: o.kind })),
          hint: `Role "${role}" has overlapping methods: ${overlaps.map((o) => o.methods.join(" / ")).join("; ")}. Consider consolidating them; nothing was renamed.`,
        });
      } catch (err) {
        logger.warn("tool_registry_failed", { agentId, role, method: name, error: String(err) });
      }
    },
    async knownTools() {
      const show = agent.knownTools ??
        agent.offeredTools.some((t) => t.role !== undefined || t.deliverable !== undefined || t.resultRequired === true);
      if (!show || agent.offeredTools.length === 0) return "";
      if (!entries) {
        try {
          entries = new Map((await store.listToolRoles()).map((e) => [e.role, e]));
        } catch (err) {
          logger.warn("tool_registry_failed", { agentId, error: String(err) });
          return "";
        }
      }
      const own = [...new Set(agent.offeredTools.map((t) => t.role ?? t.name))];
      return knownToolsBlock([...entries.values()], own);
    },
  };
}
