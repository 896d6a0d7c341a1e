package options

import "strings"

// Errors is every problem Complete found with the options, reported
// together so that an operator fixes them all in one go.
type Errors []error

// Error lists the problems, one per line.
func (e Errors) Error() string {
	var b strings.Builder
	b.WriteString("invalid options:")
	for _, err := range e {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", "\n    "))
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e Errors) Unwrap() []error { return e }
