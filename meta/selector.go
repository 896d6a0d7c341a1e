package meta

// Set is a set of labels, or of selectable fields, keyed by name.
type Set map[string]string

// Selector matches label sets (from a label selector) or field sets (from a
// field selector). Parsed selectors are immutable and safe for concurrent use,
// and Matches does not allocate, so one selector can filter a whole watch
// stream.
type Selector interface {
	// Matches reports whether s satisfies every requirement.
	Matches(s Set) bool
	// Empty reports whether the selector matches everything.
	Empty() bool
	// String returns a canonical form that parses back to an equal selector
	// (with the parser that made it). Nothing() is the one exception: no
	// string selects nothing, and its String is "".
	String() string
	// RequiresExactMatch reports the value the selector demands for key
	// (key=value or key==value), so callers can narrow a scan to one name.
	RequiresExactMatch(key string) (value string, found bool)
}

// Everything returns the selector that matches every set. It is what an
// empty label or field selector parses to.
func Everything() Selector { return everythingSelector{} }

// Nothing returns the selector that matches no set. It is what a nil
// *LabelSelector converts to.
func Nothing() Selector { return nothingSelector{} }

type everythingSelector struct{}

func (everythingSelector) Matches(Set) bool                         { return true }
func (everythingSelector) Empty() bool                              { return true }
func (everythingSelector) String() string                           { return "" }
func (everythingSelector) RequiresExactMatch(string) (string, bool) { return "", false }

type nothingSelector struct{}

func (nothingSelector) Matches(Set) bool                         { return false }
func (nothingSelector) Empty() bool                              { return false }
func (nothingSelector) String() string                           { return "" }
func (nothingSelector) RequiresExactMatch(string) (string, bool) { return "", false }
