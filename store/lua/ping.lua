--[[
  ping: one round trip through the script path (readiness).
  No keys, no arguments.
  Returns: 'pong'
]]
return 'pong'
