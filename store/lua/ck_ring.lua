--[[
  ck_ring: rings the lane of concurrency key K of one worker target in one
  home when it is parked, after a slot of K freed in K's own slot (the
  sharded layout; store/port.ts invariant `concurrency-keys`;
  store/script/key-slots.ts).

  KEYS[1] ready: ready zset of the target in that home
  ARGV[1] ck: the key K
  ARGV[2] now_str: now
  Undeclared keys: the lane keys of KEYS[1] (includes/keys.lua), in its slot.
  Returns: 'rung'
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua

-- Arguments, named in the order of the header (described in store/script/key-slots.ts).
local ready = KEYS[1]
local ck, now_str = ARGV[1], ARGV[2]

-- no checks: it only wakes a parked lane (includes/lanes.lua ring_lane).
ring_lane(ready, ck, tonumber(now_str))
return 'rung'
