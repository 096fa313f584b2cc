-- create.lua: write a new task record in status "working".
-- KEYS[1] task hash   KEYS[2] the owner's live index (hash: each live task's argument
-- bytes and their 'total', Keys.Live)   KEYS[3] the owner's deadline index
-- KEYS[4] the owner's task index (both sorted sets)
-- ARGV[1] now (unix ms)   ARGV[2] owner principal   ARGV[3] tool   ARGV[4] arguments (JSON)
-- ARGV[5] ttlMs ('' = unlimited)   ARGV[6] pollIntervalMs   ARGV[7] statusMessage
-- ARGV[8] expire-at (unix ms, '' = no Redis expiry)   ARGV[9] client capabilities (JSON)
-- ARGV[10] task id   ARGV[11] deadline (unix ms, '' = none)   ARGV[12] cap on live tasks (0 = none)
-- ARGV[13] cap on the argument bytes of the owner's live tasks (0 = none)
-- ARGV[14] the ceiling to reserve ('' = none: a free tool, or billing off)
-- ARGV[15] how long the idempotency key holds (ms; '' = no key)
-- With a ceiling or an idempotency key: KEYS[5] the owner's account
-- KEYS[6] the owner's holds   KEYS[7] the owner's ledger; with a key also
-- KEYS[8] the idempotency key's string.
-- ARGV[16] absent, or the arguments' size in bytes when they are kept in the
--   object store: ARGV[4] is then their object key, written as 'argsRef', and
--   the cap counts this size, not the key's
-- Returns OK, EXISTS when the id is taken, LIMIT when the owner has the
-- cap of live tasks already, ARGS_LIMIT when these arguments would take
-- its live tasks' argument bytes past their cap, {FUNDS, needed,
-- available} when the account's balance does not cover the ceiling, or
-- {REPLAYED, task id} when the idempotency key already made a task within
-- its TTL; nothing is written then. On OK the ceiling is moved from the
-- balance to reserved, a reserve entry is added to the ledger and the
-- hold recorded, all with the record (billing.go).
if ARGV[15] ~= '' then
  local prior = redis.call('GET', KEYS[8])
  if prior then return {REPLAYED, prior} end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return EXISTS end
if not allowed('', 'working') then return ILLEGAL end
if tonumber(ARGV[12]) > 0 and redis.call('HLEN', KEYS[2]) - 1 >= tonumber(ARGV[12]) then return LIMIT end
local argBytes, argField = #ARGV[4], 'arguments'
if ARGV[16] then argBytes, argField = tonumber(ARGV[16]), 'argsRef' end
-- The owner's total is read and written back with the task's entry: one
-- command less than an HINCRBY beside the HSET.
local total = tonumber(redis.call('HGET', KEYS[2], 'total') or '0') + argBytes
if tonumber(ARGV[13]) > 0 and total > tonumber(ARGV[13]) then return ARGS_LIMIT end
local ceiling = nil
if ARGV[14] ~= '' then
  ceiling = tonumber(ARGV[14])
  local available = tonumber(redis.call('HGET', KEYS[5], 'balance') or '0')
  if available < ceiling then return {FUNDS, ARGV[14], int(available)} end
end
-- Only what differs from a default is written: attempt, running and cancel
-- read as 0, lastUpdatedAt as createdAt, ttlMs and caps as absent.
local fields = {'status', 'working', 'statusMessage', ARGV[7], 'createdAt', ARGV[1],
  'pollIntervalMs', ARGV[6], 'owner', ARGV[2], 'tool', ARGV[3], argField, ARGV[4]}
if ARGV[5] ~= '' then fields[#fields + 1] = 'ttlMs'; fields[#fields + 1] = ARGV[5] end
if ARGV[9] ~= '{}' then fields[#fields + 1] = 'caps'; fields[#fields + 1] = ARGV[9] end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[8] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[8]) end
if ARGV[11] ~= '' then redis.call('ZADD', KEYS[3], ARGV[11], ARGV[10]) end
redis.call('HSET', KEYS[2], ARGV[10], argBytes, 'total', int(total))
redis.call('ZADD', KEYS[4], ARGV[1], ARGV[10])
if ceiling then
  redis.call('HINCRBY', KEYS[5], 'balance', int(-ceiling))
  redis.call('HINCRBY', KEYS[5], 'reserved', int(ceiling))
  redis.call('HSETNX', KEYS[5], 'principal', ARGV[2])
  local eid = redis.call('XADD', KEYS[7], '*', 'kind', 'reserve', 'task', ARGV[10], 'tool', ARGV[3],
    'reserved', int(ceiling), 'at', ARGV[1])
  redis.call('HSET', KEYS[6], 'r:' .. ARGV[10], int(ceiling) .. ' ' .. eid .. ' ' .. ARGV[3])
  redis.call('HSET', KEYS[1], 'cost', int(ceiling) .. ' 0 0') -- timeline.lua writes the settled cost
end
if ARGV[15] ~= '' then redis.call('SET', KEYS[8], ARGV[10], 'PX', ARGV[15]) end
return OK
