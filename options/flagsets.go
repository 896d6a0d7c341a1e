package options

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// NamedFlagSets are flag sets in the order --help shows them, each under
// the name of its section.
type NamedFlagSets struct {
	// Order is the order of the sections.
	Order []string
	// FlagSets holds each section's flags by name.
	FlagSets map[string]*pflag.FlagSet
}

// FlagSet returns the section's flag set, creating it (last) if missing.
func (n *NamedFlagSets) FlagSet(name string) *pflag.FlagSet {
	if n.FlagSets == nil {
		n.FlagSets = map[string]*pflag.FlagSet{}
	}
	if fs, ok := n.FlagSets[name]; ok {
		return fs
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	n.FlagSets[name] = fs
	n.Order = append(n.Order, name)
	return fs
}

// PrintSections writes each section's flags under a "<Section> flags:"
// heading, wrapping help texts at cols columns (0: no wrapping).
func (n NamedFlagSets) PrintSections(w io.Writer, cols int) {
	for _, name := range n.Order {
		fs := n.FlagSets[name]
		if !fs.HasFlags() {
			continue
		}
		fmt.Fprintf(w, "\n%s flags:\n\n%s", strings.ToUpper(name[:1])+name[1:], fs.FlagUsagesWrapped(cols))
	}
}
