package frontend

import "net/http"

// AnonymousPrincipal is the principal of unauthenticated requests where
// anonymous access is allowed.
const AnonymousPrincipal = "anonymous"

// Authenticator turns a request into the principal it acts for. An error
// answers HTTP 401. API keys, OAuth or JWT verifiers implement it without
// touching the task code.
type Authenticator interface {
	Authenticate(r *http.Request) (principal string, err error)
}

// Anonymous lets every request act as AnonymousPrincipal (mcpq dev).
type Anonymous struct{}

// Authenticate implements Authenticator.
func (Anonymous) Authenticate(*http.Request) (string, error) { return AnonymousPrincipal, nil }
