--[[
  get_turn: where a turn is. Mirrors memoryStore.getTurn.

  KEYS[1] head hash   KEYS[2] tasks list   KEYS[3] turns hash   KEYS[4] idem hash
  ARGV[1] turnId (raw)   ARGV[2] turnId JSON
  Returns: 'turn "<status>"' | 'none' (unknown agent or turn)
]]
-- @include head.lua
-- @include turns.lua

local h = read_head(KEYS[1], { 'agentId', 'activeTurnId' })
if not h then
  return 'none'
end
local st = turn_status({ tasks = KEYS[2], turns = KEYS[3], idem = KEYS[4] }, h.activeTurnId, ARGV[1], ARGV[2])
if not st then
  return 'none'
end
return 'turn "' .. st .. '"'
