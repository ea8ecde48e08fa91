-- layout.lua: fill a Redis with the memory scenario's jobs in one of
-- three layouts of the due sets (an experiment, not one of toc's scripts).
--
-- ARGV[1]  layout  A: one sorted set a slot, as toc keeps them now
--                  B: a sorted set a slot and bucket of ARGV[2] ms of due
--                     time, and a sorted set a slot of its buckets
--                  C: as B, each bucket a string of member and score
--                     records (APPEND)
-- ARGV[2]  bucket width in ms (B and C)
-- ARGV[3]  jobs (default 100,000)
-- ARGV[4]  the span of their due times in ms (default 1,200,000)
--
-- By default 100,000 jobs due over 1,200 s in 16 slots (6,250 a slot, as
-- `toc bench --scenarios memory` puts within the horizon), members of 11
-- base-60 digits as package lua writes a job id, scores due ms * 128.
-- Reply: the number of keys.
local layout = ARGV[1]
local bucketMs = tonumber(ARGV[2])
local jobs = tonumber(ARGV[3] or '100000')
local span = tonumber(ARGV[4] or '1200000')
local base = 1800000000000
local chars = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgijkmnopqrstuvwxyz'
local function member(i)
  local n, s = 4737671933429022720 + i * 4096 * 7, ''
  for k = 1, 11 do
    local d = math.floor(n % 60)
    s = string.sub(chars, d + 1, d + 1) .. s
    n = math.floor(n / 60)
  end
  return s
end
for i = 0, jobs - 1 do
  local slot = i % 16
  local due = base + math.floor(i * span / jobs)
  local score = due * 128
  local m = member(i)
  if layout == 'A' then
    redis.call('ZADD', '{t:' .. slot .. '}:store', score, m)
  else
    local b = math.floor(due / bucketMs)
    local key = '{t:' .. slot .. '}:b:' .. b
    if layout == 'B' then
      redis.call('ZADD', key, score, m)
    else
      redis.call('APPEND', key, m .. struct.pack('>d', score))
    end
    redis.call('ZADD', '{t:' .. slot .. '}:bidx', b, b)
  end
end
return redis.call('DBSIZE')
