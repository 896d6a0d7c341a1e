package options

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// LogsOptions choose what the server logs.
type LogsOptions struct {
	// Level is the least severe level logged: debug, info, warn or error.
	Level string
}

// NewLogsOptions returns the defaults: info.
func NewLogsOptions() *LogsOptions { return &LogsOptions{Level: "info"} }

// AddFlags adds --log-level.
func (o *LogsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", o.Level,
		"The least severe messages logged: debug, info, warn or error. At debug the server also logs every flag's value at startup.")
}

// Validate checks the level's name.
func (o *LogsOptions) Validate() []error {
	if _, err := o.level(); err != nil {
		return []error{err}
	}
	return nil
}

// NewLogger returns a text logger writing to w at the chosen level.
func (o *LogsOptions) NewLogger(w io.Writer) (*slog.Logger, error) {
	level, err := o.level()
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

func (o *LogsOptions) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(o.Level))); err != nil {
		return 0, fmt.Errorf("--log-level %q is not one of debug, info, warn, error", o.Level)
	}
	return l, nil
}
