package meta

// Set is a set of labels, or of selectable fields, keyed by name.
type Set map[string]string

// Selector matches label sets (from a label selector) or field sets (from a
// field selector). Parsed selectors are immutable and safe for concurrent use.
type Selector interface {
	// Matches reports whether s satisfies every requirement.
	Matches(s Set) bool
	// Empty reports whether the selector matches everything.
	Empty() bool
	// String returns a canonical form that parses back to an equal selector.
	String() string
	// RequiresExactMatch reports the value the selector demands for key
	// (key=value or key==value), so callers can narrow a scan to one name.
	RequiresExactMatch(key string) (value string, found bool)
}
