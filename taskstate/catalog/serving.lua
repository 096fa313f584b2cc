-- serving.lua: a worker says which catalog entries it serves and for how
-- long; entries whose last worker's time ran out leave the serving set.
-- KEYS[1] serving sorted set (member: catalog key; score: unix ms until
--         which some live worker serves it)
-- ARGV[1] now (unix ms)   ARGV[2] until (unix ms)   ARGV[3..] catalog keys
--         the caller serves (none: only sweep)
-- Returns {added, expired}: the keys that had no live worker before this
-- call, and the keys whose time ran out (removed). Each change is returned
-- to exactly one caller, which announces it. A score only grows: one
-- worker's heartbeat never shortens another's.
local now = tonumber(ARGV[1])
local untilMs = tonumber(ARGV[2])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
end
local added = {}
for i = 3, #ARGV do
  local old = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if not old then
    added[#added + 1] = ARGV[i]
    redis.call('ZADD', KEYS[1], untilMs, ARGV[i])
  elseif tonumber(old) < untilMs then
    redis.call('ZADD', KEYS[1], untilMs, ARGV[i])
  end
end
return {added, expired}
