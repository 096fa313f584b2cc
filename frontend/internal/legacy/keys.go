package legacy

// Keys builds every Redis key and channel name of the era. They live beside
// the task records: under the task store's prefix (taskstate.Keys.Prefix)
// and in the owner's hash tag ({owner}, taskstate.OwnerTag), the same shape
// as taskstate/keys.go gives a task's names, so all keys of one session share
// a Redis Cluster slot and a lookup under another principal cannot address
// them.
type Keys struct {
	// Prefix starts every name: the task store's.
	Prefix string
}

// Session is a 2025-11-25 HTTP session of one owner, opened by initialize
// and named by its Mcp-Session-Id: fields in session.go; it expires after
// an idle time, renewed on every request. Type: hash.
func (k Keys) Session(owner, id string) string { return k.Prefix + "{" + owner + "}:session:" + id }

// SessionSubscriptions holds the resource URIs a session subscribed to
// (resources/subscribe); it expires with its session. Type: set.
func (k Keys) SessionSubscriptions(owner, id string) string { return k.Session(owner, id) + ":subs" }

// SessionEvents holds the messages sent on one SSE stream of a session, for
// replay to a client resuming it with Last-Event-ID: field "d" the message
// ("" for a priming event), "f" set on the request's final response; capped
// at MaxStreamEvents entries, expiring with its session (sselog.go).
// Type: stream.
func (k Keys) SessionEvents(owner, id, stream string) string {
	return k.Session(owner, id) + ":events:" + stream
}

// SessionGetStream names the one GET stream of a session that gets the
// session's messages (2025-11-25: a message goes on one stream only); it
// expires unless its holder renews it (sselog.go). Type: string.
func (k Keys) SessionGetStream(owner, id string) string { return k.Session(owner, id) + ":get" }

// SessionSentStates records, per task of a session, the newest state its
// GET streams sent ("version status\x00statusMessage"), so a stream that
// takes over from another does not send it again (Store.SendTaskState).
// Type: hash; it expires with its session.
func (k Keys) SessionSentStates(owner, id string) string { return k.Session(owner, id) + ":sent" }

// SessionAsked records which stream of a session carried each input
// request of its tasks: field "TASK:KEY", value the stream's name, so a
// request goes out on one of the session's streams (Store.ClaimInput); it
// expires with its session. Type: hash.
func (k Keys) SessionAsked(owner, id string) string { return k.Session(owner, id) + ":asked" }

// SessionTasks indexes the tasks a session created with a task parameter:
// member task id, score its creation (unix ms); at most MaxSessionTasks,
// expiring with the session. Type: sorted set.
func (k Keys) SessionTasks(owner, id string) string { return k.Session(owner, id) + ":tasks" }

// SessionTaskCreated is where a session's new task is announced to its GET
// stream; the payload is the task id. Type: pub/sub channel.
func (k Keys) SessionTaskCreated(owner, id string) string {
	return k.Session(owner, id) + ":task-created"
}

// SessionStreamCall names the held request a POST stream of a session
// answers, so any front end can resume it: fields in sselog.go; it expires
// with its session. Type: hash.
func (k Keys) SessionStreamCall(owner, id, stream string) string {
	return k.Session(owner, id) + ":call:" + stream
}
