package registry

import (
	"fmt"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// Column is one extra column of a resource's server-side Table.
type Column[T meta.Object] struct {
	Name        string
	Type        string // string, integer, number, boolean, date
	Format      string
	Description string
	// Priority 0 shows by default; higher only with kubectl -o wide.
	Priority int32
	// Value returns the cell for obj.
	Value func(obj T) any
}

var (
	nameColumn = meta.TableColumnDefinition{Name: "Name", Type: "string", Format: "name",
		Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"}
	ageColumn = meta.TableColumnDefinition{Name: "Age", Type: "string",
		Description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."}
)

// tableColumns returns the column definitions: Name (unless NoNameColumn),
// the custom ones, with Age (unless NoAgeColumn) after the last one
// kubectl shows without -o wide, as every kube-apiserver printer places it
// (a RoleBinding's: NAME ROLE AGE, then USERS GROUPS SERVICEACCOUNTS).
func (s *Store[T]) tableColumns() []meta.TableColumnDefinition {
	cols := make([]meta.TableColumnDefinition, 0, len(s.opts.Columns)+2)
	if !s.opts.NoNameColumn {
		cols = append(cols, nameColumn)
	}
	age := s.ageIndex()
	for i, c := range s.opts.Columns {
		if i == age {
			cols = append(cols, ageColumn)
		}
		cols = append(cols, meta.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
	}
	if age == len(s.opts.Columns) {
		cols = append(cols, ageColumn)
	}
	return cols
}

// ageIndex is the index among Columns before which Age goes: after the
// last column of priority 0; len(Columns) when it goes last, -1 when
// there is none (NoAgeColumn).
func (s *Store[T]) ageIndex() int {
	if s.opts.NoAgeColumn {
		return -1
	}
	i := len(s.opts.Columns)
	for i > 0 && s.opts.Columns[i-1].Priority > 0 {
		i--
	}
	return i
}

// tableCells returns one row's cells for obj, in tableColumns' order.
func (s *Store[T]) tableCells(obj T, now time.Time) []any {
	cells := make([]any, 0, len(s.opts.Columns)+2)
	m := obj.GetObjectMeta()
	if !s.opts.NoNameColumn {
		cells = append(cells, m.Name)
	}
	age := s.ageIndex()
	for i, c := range s.opts.Columns {
		if i == age {
			cells = append(cells, TimestampSince(m.CreationTimestamp, now))
		}
		cells = append(cells, c.Value(obj))
	}
	if age == len(s.opts.Columns) {
		cells = append(cells, TimestampSince(m.CreationTimestamp, now))
	}
	return cells
}

// TimestampSince renders the age of t as kubectl shows ages ("5m", "3d4h"),
// "<unknown>" for a zero time.
func TimestampSince(t meta.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return HumanDuration(now.Sub(t.Time))
}

// HumanDuration formats d coarsely, the way Kubernetes prints ages.
func HumanDuration(d time.Duration) string {
	if seconds := int(d.Seconds()); seconds < -1 {
		return "<invalid>"
	} else if seconds < 0 {
		return "0s"
	} else if seconds < 60*2 {
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	} else if minutes < 60*3 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		if m := int(d/time.Minute) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*2:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*8:
		if dy := (hours / 24) % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}
