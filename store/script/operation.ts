/**
 * A store operation's script, described once: its argument layout (the
 * names of its KEYS and ARGV, as its header names them; store/lua/args/layout.ts),
 * the words it answers, and how its reply becomes the port's result. The
 * script store runs every described script the same way
 * (`ScriptContext.run`: encode the named values, EVALSHA through the
 * adapter's transport, check the word, decode), on one Redis, Upstash and
 * Redis Cluster alike; nothing per script lives anywhere else.
 *
 * Invariant (tests/store/store-operation-files.test.ts): an operation on this path
 * is written in at most four hand-written files: its Lua script
 * (store/lua/<name>.lua), the section file of store/script/ that holds its
 * descriptor and its port method over it, the port (store/port.ts) and the
 * memory store's section file (store/memory/). The Lua bundle is generated
 * (scripts/bundle-lua.ts); the binding into the store object is generic
 * (store/lua-store.ts binds every function of a section). See docs/store.md
 * "Adding a store operation".
 *
 * The commit and the claims (commit.lua, claim.lua, claim_next.lua) keep
 * their tuned path (store/script/turn-protocol.ts, store/script/wire.ts,
 * `decode` in replies.ts): the hottest calls of a step.
 */
import { encoder, type ScriptArgs, type ScriptFields, type ScriptLayout } from "../lua/args/layout.ts";
import { StoreReplyError } from "../script-runner.ts";

/** A script's layout and the words its replies start with (its header's "Returns"). */
export interface OperationLayout extends ScriptLayout {
  readonly words: readonly string[];
}

/** The result of a reply from its word and its payload after one space (`""`: none). */
export type ReplyDecoder<L extends OperationLayout, R> = (word: L["words"][number], payload: string) => R;

/** A described script: its layout, encoder and reply decoder. */
export type ScriptOp<L extends OperationLayout = OperationLayout, R = unknown> = L & {
  /** Named values in, positional lists out (store/lua/args/layout.ts). */
  readonly encode: (fields: ScriptFields<L>) => ScriptArgs;
  /** The port result of a reply; throws StoreReplyError for a word the script does not answer. */
  readonly reply: (reply: string) => R;
};

/** Describes one script: the layout with its reply words, and the decoder of its replies. */
export function scriptOp<const L extends OperationLayout, R>(layout: L, decode: ReplyDecoder<L, R>): ScriptOp<L, R> {
  const words: readonly string[] = layout.words;
  return {
    ...layout,
    encode: encoder(layout),
    reply: (reply: string) => {
      const sp = reply.indexOf(" ");
      const word = sp < 0 ? reply : reply.slice(0, sp);
      if (!words.includes(word)) {
        throw new StoreReplyError(`Script ${layout.script} answered an unknown reply ${JSON.stringify(reply.slice(0, 80))}`);
      }
      return decode(word, sp < 0 ? "" : reply.slice(sp + 1));
    },
  };
}

/** The JSON value of a payload, as the script's header says it is. */
export const json = <T>(payload: string): T => JSON.parse(payload) as T;
