package cacher

// Delegated reports how many reads the backend served, for tests outside
// the package.
func (c *Cacher) Delegated() int64 { return c.delegated.Load() }
