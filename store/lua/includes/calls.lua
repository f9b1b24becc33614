--[[
  A tool call record as readers see it, from the fields of the turn's calls
  hash: `c:<id>` (the call as recorded), `a:<id>` (its approval decision,
  store/port.ts invariant `first-decision-wins`: `approval` and, once
  approved, the moved `deadline`) and `r:<id>` (its resolution). Later
  fields repeat keys of earlier ones; JSON.parse keeps the last.
]]
local function merge_call(base, overlay, res)
  local s = string.sub(base, 1, -2)
  if overlay then
    s = s .. ',' .. string.sub(overlay, 2, -2)
  end
  if res then
    return s .. ',' .. string.sub(res, 2)
  end
  return s .. ',"status":"pending"}'
end
