-- claim.lua: claim every job of slot 0 of layout A or B (see layout.lua)
-- in claims of 100, each moved to a Prepare sorted set as claim.lua of
-- package lua does (an experiment, not one of toc's scripts).
--
-- ARGV[1]  layout  A or B
--
-- Reply: {jobs claimed, claims}
local layout = ARGV[1]
local limit = 100
local bound = (1800000000000 + 1200000) * 128 + 127
local n = 0
local calls = 0
if layout == 'A' then
  while true do
    local r = redis.call('ZRANGEBYSCORE', '{t:0}:store', '-inf', bound, 'WITHSCORES', 'LIMIT', 0, limit)
    if #r == 0 then break end
    redis.call('ZREMRANGEBYRANK', '{t:0}:store', 0, #r / 2 - 1)
    local batch = {}
    for i = 1, #r, 2 do batch[#batch + 1] = r[i + 1]; batch[#batch + 1] = r[i] end
    redis.call('ZADD', '{t:0}:prepare', unpack(batch))
    n = n + #r / 2
    calls = calls + 1
  end
else
  while true do
    local got, batch = 0, {}
    local bs = redis.call('ZRANGE', '{t:0}:bidx', 0, 9)
    if #bs == 0 then break end
    for _, b in ipairs(bs) do
      local key = '{t:0}:b:' .. b
      local r = redis.call('ZRANGEBYSCORE', key, '-inf', bound, 'WITHSCORES', 'LIMIT', 0, limit - got)
      if #r > 0 then
        redis.call('ZREMRANGEBYRANK', key, 0, #r / 2 - 1)
        for i = 1, #r, 2 do batch[#batch + 1] = r[i + 1]; batch[#batch + 1] = r[i] end
        got = got + #r / 2
      end
      if redis.call('EXISTS', key) == 0 then redis.call('ZREM', '{t:0}:bidx', b) end
      if got >= limit then break end
    end
    if got == 0 then break end
    redis.call('ZADD', '{t:0}:prepare', unpack(batch))
    n = n + got
    calls = calls + 1
  end
end
return {n, calls}
