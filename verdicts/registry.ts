/**
 * The guardian registry: which guardians exist and which agent each one is
 * assigned to. Built once from the definitions (createGatehouse), immutable
 * afterwards; a verdict is accepted only for a registered guardian through an
 * existing assignment (verdicts/log.ts).
 *
 * - Every agent that declares `output` has its output verifier registered as
 *   guardian `output_verifier:<agent>` and assigned to it.
 * - Guardians of `defineAgent({ guardians })` are registered and assigned to
 *   that agent, in the order given.
 * - `createGatehouse({ guardians, assignments })` registers more guardians and
 *   assigns them (`{ agent, guardian }` by name and code) after the agent's
 *   own, in the order given. Assigned guardians need `output` on the agent
 *   (they review its `agent_output` candidates).
 * - Assignment ids are deterministic: `assignment:<agent>:<guardianCode>`,
 *   so every process of a deployment names an assignment the same way.
 *
 * - The built-in spend-limit guardian, code `budget` (SPEND_LIMIT_GUARDIAN), is registered and
 *   assigned to every agent, after all other assignments: it judges spend
 *   limits (actors/spend/spend-limit.ts) and writes a `FAIL` verdict when a turn crosses
 *   one. It reviews no candidate (it is not in `guardiansFor`), and no other
 *   guardian may take its code.
 *
 * Refused with a `DefinitionError`: two different guardians with one code, an
 * assignment naming an unknown agent or guardian, an agent without `output`,
 * or the same assignment twice.
 */
import { DefinitionError } from "../errors/errors.ts";
import { type Guardian, outputVerifierCode } from "./guardian.ts";
import { SPEND_LIMIT_GUARDIAN } from "../common/spend-limit.ts";

export interface RegisteredGuardian {
  readonly code: string;
  readonly kind: "output_verifier" | "guardian" | "builtin";
  readonly description: string;
  /** The definition (guardians only; the output verifier is the agent's `output.verify`). */
  readonly guardian: Guardian | null;
}

export interface GuardianAssignment {
  readonly assignmentId: string;
  readonly agent: string;
  readonly guardianCode: string;
}

export interface GuardianRegistry {
  get(code: string): RegisteredGuardian | undefined;
  /** Guardians assigned to an agent beyond its output verifier, in review order. */
  guardiansFor(agentName: string): readonly Guardian[];
  assignmentOf(agentName: string, guardianCode: string): GuardianAssignment | undefined;
  assignment(assignmentId: string): GuardianAssignment | undefined;
  list(): RegisteredGuardian[];
  assignments(): GuardianAssignment[];
}

export interface RegistryInput {
  agents: Iterable<RegistryAgent>;
  guardians?: Guardian[];
  assignments?: Array<{ agent: string; guardian: string }>;
}

/**
 * What the registry reads of an agent definition (an `AgentDefinition` fits).
 * Spelled out here so that verdicts/ does not import agents/, which imports it.
 */
export interface RegistryAgent {
  readonly name: string;
  readonly output?: unknown;
  readonly guardians?: readonly Guardian[];
}

export { SPEND_LIMIT_GUARDIAN };

export const assignmentIdOf = (agentName: string, guardianCode: string) => `assignment:${agentName}:${guardianCode}`;

export function createGuardianRegistry(input: RegistryInput): GuardianRegistry {
  const byCode = new Map<string, RegisteredGuardian>();
  const byId = new Map<string, GuardianAssignment>();
  const perAgent = new Map<string, Guardian[]>();
  const agents = new Map<string, RegistryAgent>();
  for (const a of input.agents) agents.set(a.name, a);

  const register = (g: Guardian, where: string) => {
    if (!g || g.kind !== "guardian") throw new DefinitionError(`${where}: guardians must come from defineGuardian()`);
    if (g.code === SPEND_LIMIT_GUARDIAN) throw new DefinitionError(`${where}: the guardian code "${SPEND_LIMIT_GUARDIAN}" is built in (spend limits)`);
    const prior = byCode.get(g.code);
    if (prior && prior.guardian !== g) {
      throw new DefinitionError(`${where}: two different guardians have the code "${g.code}"`);
    }
    if (!prior) byCode.set(g.code, Object.freeze({ code: g.code, kind: "guardian", description: g.description ?? "", guardian: g }));
  };
  const assign = (agentName: string, code: string, where: string) => {
    const id = assignmentIdOf(agentName, code);
    if (byId.has(id)) throw new DefinitionError(`${where}: guardian "${code}" is assigned to agent "${agentName}" twice`);
    byId.set(id, Object.freeze({ assignmentId: id, agent: agentName, guardianCode: code }));
  };

  for (const a of agents.values()) {
    if (!a.output) continue;
    const code = outputVerifierCode(a.name);
    byCode.set(code, Object.freeze({ code, kind: "output_verifier", description: `Output verifier of agent "${a.name}"`, guardian: null }));
    assign(a.name, code, `Agent "${a.name}"`);
  }
  for (const a of agents.values()) {
    for (const g of a.guardians ?? []) {
      register(g, `Agent "${a.name}"`);
      assign(a.name, g.code, `Agent "${a.name}"`);
      perAgent.set(a.name, [...(perAgent.get(a.name) ?? []), g]);
    }
  }
  for (const g of input.guardians ?? []) register(g, "createGatehouse()");
  for (const [i, asg] of (input.assignments ?? []).entries()) {
    const where = `createGatehouse(): assignments[${i}]`;
    if (!asg || typeof asg.agent !== "string" || typeof asg.guardian !== "string") {
      throw new DefinitionError(`${where} must be { agent: string, guardian: string }`);
    }
    const agent = agents.get(asg.agent);
    if (!agent) throw new DefinitionError(`${where} names unknown agent "${asg.agent}"`);
    const reg = byCode.get(asg.guardian);
    if (!reg || reg.kind !== "guardian") {
      throw new DefinitionError(`${where} names unknown guardian "${asg.guardian}" (register it in \`guardians\`)`);
    }
    if (!agent.output) {
      throw new DefinitionError(`${where}: agent "${asg.agent}" declares no output, so there is nothing to review`);
    }
    assign(asg.agent, asg.guardian, where);
    perAgent.set(asg.agent, [...(perAgent.get(asg.agent) ?? []), reg.guardian!]);
  }

  byCode.set(SPEND_LIMIT_GUARDIAN, Object.freeze({
    code: SPEND_LIMIT_GUARDIAN, kind: "builtin", description: "Spend limits: fails a turn that crosses its spend limit", guardian: null,
  }));
  for (const a of agents.values()) assign(a.name, SPEND_LIMIT_GUARDIAN, `Agent "${a.name}"`);

  const frozen = new Map([...perAgent].map(([k, v]) => [k, Object.freeze([...v])] as const));
  const none: readonly Guardian[] = Object.freeze([]);
  return Object.freeze({
    get: (code: string) => byCode.get(code),
    guardiansFor: (agentName: string) => frozen.get(agentName) ?? none,
    assignmentOf: (agentName: string, guardianCode: string) => byId.get(assignmentIdOf(agentName, guardianCode)),
    assignment: (id: string) => byId.get(id),
    list: () => [...byCode.values()],
    assignments: () => [...byId.values()],
  });
}
