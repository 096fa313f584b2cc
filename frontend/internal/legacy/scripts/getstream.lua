-- getstream.lua: does GET stream ARGV[1] of a legacy session hold the
-- session's messages (a message goes on one stream of a session only), and
-- may it send a task's state (notifications/tasks/status)? A stream that
-- became the session's GET stream late must not send again what an earlier
-- holder sent (sselog.go).
-- KEYS[1] the session's GET-stream hold (Keys.SessionGetStream)
-- KEYS[2] the states sent on its GET streams (Keys.SessionSentStates)
-- ARGV[1] stream   ARGV[2] hold (ms)   ARGV[3] task id ('': the hold alone)
-- ARGV[4] the record's version   ARGV[5] the state (status and statusMessage)
-- ARGV[6] the session's idle expiry (ms)   ARGV[7] most tasks KEYS[2] keeps
-- Returns 0 when another stream holds the session. Else ARGV[1] holds it
-- (taking over when no stream does, renewed for ARGV[2]) and, without a
-- task, 1; with one, 1 when the task's state at this version was not sent
-- yet on any of the session's GET streams, which it now records, else 0.
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] == '' then return 1 end
local last = redis.call('HGET', KEYS[2], ARGV[3])
if last then
  local v, state = string.match(last, '^(%d+) (.*)$')
  if v and (tonumber(v) >= tonumber(ARGV[4]) or state == ARGV[5]) then
    if tonumber(v) < tonumber(ARGV[4]) then redis.call('HSET', KEYS[2], ARGV[3], ARGV[4] .. ' ' .. ARGV[5]) end
    return 0
  end
elseif redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[7]) then
  redis.call('DEL', KEYS[2]) -- a long session's oldest tasks: forget them all (one state may then go twice)
end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4] .. ' ' .. ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1
