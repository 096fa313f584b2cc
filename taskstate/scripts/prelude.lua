-- prelude.lua: prepended (after the generated TRANSITIONS table) to every script.
-- Return codes shared by all scripts; taskstate/codes.go mirrors them.
local OK, NOT_FOUND, ILLEGAL, STALE, EXISTS, CANCELLED, TERMINAL, EXPIRED, KEY_REUSED, LIMIT = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9

local function allowed(from, to)
  local row = TRANSITIONS[from or '']
  return row ~= nil and row[to] == true
end

local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- expired: the task's ttlMs (empty = unlimited) has run out at now.
local function expired(createdAt, ttlMs, now)
  if not ttlMs or ttlMs == '' then return false end
  return tonumber(now) >= tonumber(createdAt) + tonumber(ttlMs)
end

-- ended: a task left the live set (KEYS[2] of every script that can end one)
-- and drops what only a run needs: its arguments, the creating client's
-- capabilities, the handler's checkpoint and which delivery held it when
-- (KEYS[1], the record), which a finished task would otherwise keep for the
-- rest of its TTL.
local function ended(id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[1], 'arguments', 'caps', 'checkpoint', 'running', 'heartbeat')
end
