// Package access holds who may call a front end, and how often: managed
// API keys (only their SHA-256 is stored) and each principal's token
// bucket of requests, shared by every front end through Redis. It is not
// part of a task, so it lives apart from taskstate; its Redis keys follow
// taskstate's prefix rules (keys.go).
package access
