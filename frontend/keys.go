package frontend

// The Redis keys of the front end itself, under the deployment's prefix
// (Config.Prefix), as taskstate/keys.go builds the task's.

// stateKeyName holds the HMAC key front ends share for MRTR requestState
// (base64). Type: string.
func stateKeyName(prefix string) string { return prefix + "state-key" }
