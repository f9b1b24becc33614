/**
 * The one path every store script takes: EVALSHA with the script's SHA-1,
 * and EVAL (which also loads the script) when Redis answers NOSCRIPT (after a
 * restart, a failover or SCRIPT FLUSH). Web APIs only: the SHA-1 comes from
 * Web Crypto, the sources from the generated module (Workers have no
 * filesystem).
 *
 * Every script answers one string: a status word, optionally followed by one
 * space and a payload (JSON, or a stored text). A status word is never valid
 * JSON, so a client that parses replies as JSON (such as @upstash/redis with
 * automatic deserialization on) hands the string through unchanged, and both
 * adapters see identical values.
 */
import { sha1Hex } from "../common/hex.ts";
import { type ScriptName, scripts } from "./lua/scripts.gen.ts";
import { EvictionPolicyError, StoreReplyError } from "../errors/store.ts";

/** What a Redis client must offer to run the store scripts. */
export interface ScriptTransport {
  /** EVALSHA. Must reject with an error whose message contains `NOSCRIPT` when the script is not cached. */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVAL with the full source. */
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
}

/** A script answered something that is not one of its replies; the Redis server may evict keys (errors/store.ts). */
export { EvictionPolicyError, StoreReplyError };

/** Throws EvictionPolicyError for `allkeys-*` and `volatile-*` policies unless allowed. */
export function assertNoEviction(policy: string | null, allowEviction: boolean): void {
  if (policy === null || allowEviction) return;
  if (/^(allkeys|volatile)-/.test(policy)) throw new EvictionPolicyError(policy);
}

export type RunScript = (name: ScriptName, keys: string[], args: string[]) => Promise<string>;

const isNoScript = (err: unknown) => err instanceof Error && err.message.includes("NOSCRIPT");

/** Runs store scripts over `transport`: EVALSHA first, EVAL on NOSCRIPT. */
export function scriptRunner(transport: ScriptTransport): RunScript {
  const shas = new Map<ScriptName, Promise<string>>();
  /** The digests computed so far: a call finds its SHA without waiting for a settled promise. */
  const known = new Map<ScriptName, string>();
  const shaOf = (name: ScriptName) => {
    let sha = shas.get(name);
    if (!sha) {
      shas.set(name, (sha = sha1Hex(scripts[name])));
      // A failed digest is the caller's to see (through `await shaOf`), not an unhandled rejection here.
      sha.then((hex) => known.set(name, hex), () => {});
    }
    return sha;
  };
  return async (name, keys, args) => {
    let reply: unknown;
    try {
      reply = await transport.evalsha(known.get(name) ?? await shaOf(name), keys, args);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      reply = await transport.eval(scripts[name], keys, args);
    }
    if (typeof reply !== "string") {
      throw new StoreReplyError(`Script ${name} answered ${JSON.stringify(reply)}; every store script answers a string`);
    }
    return reply;
  };
}

/** One script of a pipeline: its name, keys and arguments. */
export interface ScriptCall {
  name: ScriptName;
  keys: string[];
  args: string[];
}

/** What one script of a pipeline answered (or threw); `late`: sent again after the later ones (NOSCRIPT). */
export interface PipedReply {
  reply: { ok: true; value: string } | { ok: false; error: unknown };
  late: boolean;
}

/** Runs several store scripts in one pipeline (one write, the replies read together); one answer per call, in order. */
export type RunPipeline = (calls: ScriptCall[]) => Promise<PipedReply[]>;

/** A Redis client's pipeline: EVALSHA of each `[sha, keys, args]` in one write; `[error, reply]` of each, in order. */
export type PipelineTransport = (calls: Array<[sha: string, keys: string[], args: string[]]>) => Promise<Array<[Error | null, unknown]>>;

const pipelineShas = new Map<ScriptName, Promise<string>>();

/**
 * Runs scripts in one pipeline over `exec`: EVALSHA of each in one write. A script Redis does not have
 * cached (NOSCRIPT: not run) is sent again through `run` (EVAL, which loads it) after the pipeline, in
 * order, and marked `late`: it ran after the later scripts of the pipeline. A pipeline that fails as a
 * whole (the connection) fails each call with that error.
 */
export function pipelineRunner(exec: PipelineTransport, run: RunScript): RunPipeline {
  const shaOf = (name: ScriptName) => {
    let sha = pipelineShas.get(name);
    if (!sha) pipelineShas.set(name, (sha = sha1Hex(scripts[name])));
    return sha;
  };
  return async (calls) => {
    const shas = await Promise.all(calls.map((c) => shaOf(c.name)));
    let answers: Array<[Error | null, unknown]>;
    try {
      answers = await exec(calls.map((c, i) => [shas[i], c.keys, c.args]));
    } catch (error) {
      return calls.map(() => ({ reply: { ok: false as const, error }, late: false }));
    }
    const out: PipedReply[] = [];
    for (let i = 0; i < calls.length; i++) {
      const [err, reply] = answers[i] ?? [new StoreReplyError("the pipeline answered fewer replies than it was sent"), null];
      if (err && isNoScript(err)) {
        const c = calls[i];
        out.push({ reply: await run(c.name, c.keys, c.args).then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), late: true });
      } else if (err) out.push({ reply: { ok: false, error: err }, late: false });
      else if (typeof reply !== "string") {
        out.push({ reply: { ok: false, error: new StoreReplyError(`Script ${calls[i].name} answered ${JSON.stringify(reply)}; every store script answers a string`) }, late: false });
      } else out.push({ reply: { ok: true, value: reply }, late: false });
    }
    return out;
  };
}
