--[[
  ck_reserve: reserves one slot of concurrency key K in K's own slot, on the
  sharded layout (store/port.ts invariant `concurrency-keys`; docs/store.md
  "Concurrency keys and lanes"; store/script/key-slots.ts).

  KEYS[1] running: `<p>:{ck:<K>}:running` (zset: reservation member -> its lease end)
  KEYS[2] waiting: `<p>:{ck:<K>}:waiting` (set of `<home prefix>\n<target>` whose lane of K waits)
  ARGV[1] member: the reservation, `<home prefix>\n<nonce>`
  ARGV[2] until_str: its lease end (ms)
  ARGV[3] now_str: now
  ARGV[4] limit_text: limit(K), a whole number from 1
  ARGV[5] waiter: `<home prefix>\n<target>` of the claim
  Returns: 'reserved' | 'full <earliest lease end>' (the waiter recorded: the next release rings it)
]]

-- Arguments, named in the order of the header (described in store/script/key-slots.ts).
local running, waiting = KEYS[1], KEYS[2]
local member, until_str, now_str, limit_text, waiter = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

-- write before checks done: the count prunes the reservations that ran out (they count for no one)
redis.call('ZREMRANGEBYSCORE', running, '-inf', now_str)
if redis.call('ZCARD', running) >= tonumber(limit_text) then
  -- write before checks done: a refusal records the waiting home and target, rung by the next release
  redis.call('SADD', waiting, waiter)
  return 'full ' .. redis.call('ZRANGE', running, 0, 0, 'WITHSCORES')[2]
end

-- Checks done; writes follow.
redis.call('ZADD', running, until_str, member)
return 'reserved'
