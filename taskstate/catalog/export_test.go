package catalog

// Serving exposes the serving set's key name to the external tests, which
// look at Redis itself.
func (k Keys) Serving() string { return k.serving() }
