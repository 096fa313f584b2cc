// Package check validates mcpq's deployment files offline: the Kubernetes
// manifests in deploy/k8s decode strictly into the k8s.io/api types (an
// unknown or misspelt field fails) and hang together (selectors, named
// ports, the HPA's target, the workers' grace period against their drain,
// every MCPQ_* variable a real one), the Redis chart values carry the
// settings docs/redis.md asks for, and the Dockerfile builds with
// scripts/build-static and runs as non-root. It is its own module so the
// Kubernetes types stay out of mcpq's go.mod; scripts/test runs it.
package check
