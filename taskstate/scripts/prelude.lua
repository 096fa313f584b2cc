-- prelude.lua: prepended to every script, after the generated TRANSITIONS
-- table and return codes (OK, NOT_FOUND, ...: taskstate/errors.go).

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

-- free_slot: the task (KEYS[1], the record) gives back its place in the
-- running set of its queue, if a per-principal share counted it: the
-- record's 'slot' field names that set (Keys.Running, built by claim.go
-- and passed to claim.lua as a key; in the owner's hash tag, so the same
-- Cluster slot as KEYS[1]).
local function free_slot(id)
  local slot = redis.call('HGET', KEYS[1], 'slot')
  if slot then
    redis.call('ZREM', slot, id)
    redis.call('HDEL', KEYS[1], 'slot')
  end
end

-- ended: a task left the live set and the held index (KEYS[2] and KEYS[3] of
-- every script that can end one) and drops what only a run needs: its
-- arguments (or the object key holding them: the worker deletes that
-- object; worker/blobs.go), the creating client's capabilities, the handler's checkpoint
-- and which delivery held it when (KEYS[1], the record), which a finished
-- task would otherwise keep for the rest of its TTL; and its place in the
-- running set of its queue (free_slot).
-- It also returns the task's argument bytes to the owner's budget: the hash
-- KEYS[2]..':args' (Keys.ArgBytes, in the owner's hash tag, so the same
-- slot as KEYS[2]) holds each live task's argument bytes and their 'total';
-- create.lua adds to it. When the live set is empty the hash goes, so a
-- record Redis expired before the reaper saw it cannot leave bytes behind.
local function ended(id)
  free_slot(id)
  local ab = KEYS[2] .. ':args'
  local n = redis.call('HGET', ab, id)
  if n then
    redis.call('HDEL', ab, id)
    redis.call('HINCRBY', ab, 'total', -tonumber(n))
  end
  redis.call('ZREM', KEYS[2], id)
  if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('DEL', ab) end
  redis.call('ZREM', KEYS[3], id)
  redis.call('HDEL', KEYS[1], 'arguments', 'argsRef', 'caps', 'checkpoint', 'running', 'heartbeat', 'cancelAt')
end

-- look_at: the held index (KEYS[3]) is to look at task id again by unix ms
-- due: an earlier time already there stays.
local function look_at(id, due)
  local cur = redis.call('ZSCORE', KEYS[3], id)
  if not cur or tonumber(cur) > tonumber(due) then redis.call('ZADD', KEYS[3], due, id) end
end

-- state_changed: the one way a script announces the task's new state on its
-- events channel (channel; KEYS[1] is the record, already written). It
-- counts the change in the record's 'version' and publishes the fields that
-- move with a state, so a listener can show each state once and in order
-- without reading the record; taskstate/events.go's DecodeEvent reads it:
-- {"version": n, "status": s, "statusMessage": m, "lastUpdatedAt": "ms", "cancel": "1"?}
local function state_changed(channel)
  local f = redis.call('HMGET', KEYS[1], 'status', 'statusMessage', 'lastUpdatedAt', 'cancel')
  local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
  -- HMGET answers false for an absent field; "or nil" leaves it out.
  redis.call('PUBLISH', channel, cjson.encode({version = v, status = f[1], statusMessage = f[2] or nil,
    lastUpdatedAt = f[3] or nil, cancel = f[4] or nil}))
end
