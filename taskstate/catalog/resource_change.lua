-- resource_change.lua: announce a resource's change once, however many
-- workers see it (AnnounceResourceChange).
-- KEYS[1] the change's marker (Keys.resourceChange)
-- ARGV[1] the resource URI   ARGV[2] the resource-updates channel
-- ARGV[3] how long the marker is kept (ms)
-- Returns 1 when this call announced the change, 0 when another had.
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[3]) then return 0 end
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1
