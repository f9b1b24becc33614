--[[
  ck_release: gives back a reservation of concurrency key K, after the home
  released its lease, and answers the homes waiting for a slot of K (the
  sharded layout; store/port.ts invariant `concurrency-keys`;
  store/script/key-slots.ts rings each).

  KEYS[1] running: `<p>:{ck:<K>}:running`
  KEYS[2] waiting: `<p>:{ck:<K>}:waiting`
  ARGV[1] member: the reservation
  Returns: 'released [<home prefix>\n<target>, ...]' (the waiters, now forgotten)
]]

-- Arguments, named in the order of the header (described in store/script/key-slots.ts).
local running, waiting = KEYS[1], KEYS[2]
local member = ARGV[1]

-- no checks: a release of a reservation already gone removes nothing.
redis.call('ZREM', running, member)
local w = redis.call('SMEMBERS', waiting)
if #w == 0 then
  return 'released []'
end
redis.call('DEL', waiting)
return 'released ' .. cjson.encode(w)
