--[[
  read_events: events with id > after, at most `limit`. Ids are dense from 1,
  so the event with id k sits at list index k-1.

  KEYS[1] events list
  ARGV[1] after (>= 0)   ARGV[2] limit (>= 1)
  Returns: 'list [StoredEvent JSON, ...]'
]]
-- reads only: writes nothing.
-- @include head.lua

local after, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
return 'list ' .. json_list(redis.call('LRANGE', KEYS[1], after, after + limit - 1))
