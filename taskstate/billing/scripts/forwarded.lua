-- forwarded.lua: move an owner's ledger outbox cursor (Accounts.Forward)
-- once a hook acknowledged the entries up to it.
-- KEYS[1] the owner's forwarded cursor (string)
-- ARGV[1] the cursor the forwarder read ('' = none yet)   ARGV[2] the new cursor
-- Returns 1, or 0 when another forwarder moved the cursor meanwhile
-- (nothing written: the entries were offered twice, which a hook allows).
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
