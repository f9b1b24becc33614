--[[
  ck_renew: moves a reservation of concurrency key K to a later lease end,
  before the home renews the lease (the sharded layout; store/port.ts
  invariant `concurrency-keys`; store/script/key-slots.ts).

  KEYS[1] running: `<p>:{ck:<K>}:running`
  ARGV[1] member: the reservation
  ARGV[2] until_str: the new lease end (ms)
  ARGV[3] now_str: now
  Returns: 'renewed' | 'absent' (released, or ran out: nothing written)
]]

-- Arguments, named in the order of the header (described in store/script/key-slots.ts).
local running = KEYS[1]
local member, until_str, now_str = ARGV[1], ARGV[2], ARGV[3]

local score = redis.call('ZSCORE', running, member)
if not score or tonumber(score) <= tonumber(now_str) then
  return 'absent'
end

-- Checks done; writes follow.
if tonumber(until_str) > tonumber(score) then
  redis.call('ZADD', running, 'XX', until_str, member)
end
return 'renewed'
