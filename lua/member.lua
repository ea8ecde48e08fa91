-- member: the prelude of every script (see run.go), not a script itself.
--
-- MAX_UNPACK bounds the pairs a script hands one command through
-- unpack(), which takes at most a few thousand values.
local MAX_UNPACK = 1000

-- level returns the index in a script's dues table {dueHigh, due,
-- dueLow} of the due set a member belongs in: its last byte names
-- its priority, "h" high, "l" low, anything else normal (package lua's
-- Member and ParseMember are the Go side of this encoding).
local function level(m)
  local last = string.sub(m, -1)
  if last == 'h' then
    return 1
  elseif last == 'l' then
    return 3
  end
  return 2
end

-- earliest returns the lowest score in the sorted sets of sets (a slot's
-- due sets, or {prepare} for its next lease deadline), or nil when they
-- are all empty.
local function earliest(sets)
  local low = nil
  for s = 1, #sets do
    local r = redis.call('ZRANGE', sets[s], 0, 0, 'WITHSCORES')
    if r[2] and (low == nil or tonumber(r[2]) < low) then
      low = tonumber(r[2])
    end
  end
  return low
end

