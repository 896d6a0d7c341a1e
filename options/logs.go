package options

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// LogsOptions choose what the server logs and how.
type LogsOptions struct {
	// Verbosity is kube-apiserver's -v: messages of verbosity N are logged
	// when N <= Verbosity. apikit's levels map -v=N to slog level -N, so
	// -v=3 shows the per-request "HTTP" line and -v=4 slog's Debug.
	Verbosity int
	// Format is "text" (slog's key=value lines) or "json" (one object per
	// line with kube's keys: ts, v, msg, err).
	Format string
	// Level is the least severe level logged: debug, info, warn or error;
	// the lower of it and Verbosity wins. Kept for earlier command lines.
	Level string
}

// NewLogsOptions returns the defaults: text, -v=0, info.
func NewLogsOptions() *LogsOptions { return &LogsOptions{Format: "text", Level: "info"} }

// AddFlags adds -v/--v, --logging-format and --log-level.
func (o *LogsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&o.Verbosity, "v", "v", o.Verbosity,
		"Number for the log level verbosity, as kube-apiserver's: 3 logs one line per request, 4 and more debug messages.")
	fs.StringVar(&o.Format, "logging-format", o.Format,
		`Sets the log format. Permitted formats: "json", "text".`)
	fs.StringVar(&o.Level, "log-level", o.Level,
		"The least severe messages logged: debug, info, warn or error (-v raises it). At debug the server also logs every flag's value at startup.")
}

// Validate checks the level's name, the verbosity and the format.
func (o *LogsOptions) Validate() []error {
	var errs []error
	if _, err := o.level(); err != nil {
		errs = append(errs, err)
	}
	if o.Format != "text" && o.Format != "json" {
		errs = append(errs, fmt.Errorf(`--logging-format %q is not one of "json", "text"`, o.Format))
	}
	return errs
}

// NewLogger returns a logger writing to w in the chosen format, at the
// more verbose of --log-level and -v.
func (o *LogsOptions) NewLogger(w io.Writer) (*slog.Logger, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errs[0]
	}
	level, _ := o.level()
	opts := &slog.HandlerOptions{Level: level}
	if o.Format == "json" {
		opts.ReplaceAttr = kubeJSONAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// level is the more verbose of --log-level and -v.
func (o *LogsOptions) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(o.Level))); err != nil {
		return 0, fmt.Errorf("--log-level %q is not one of debug, info, warn, error", o.Level)
	}
	if o.Verbosity < 0 {
		return 0, fmt.Errorf("-v %d must be at least 0", o.Verbosity)
	}
	if v := slog.Level(-o.Verbosity); v < l {
		l = v
	}
	return l, nil
}

// kubeJSONAttr writes slog's built-in keys as kube-apiserver's JSON
// format does: "ts" in seconds since the epoch, "v" the verbosity of an
// info message (an error has none, as kube's), "err" for errors.
func kubeJSONAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if t, ok := a.Value.Any().(time.Time); ok {
			return slog.Float64("ts", float64(t.UnixNano())/1e9)
		}
	case slog.LevelKey:
		l, ok := a.Value.Any().(slog.Level)
		if !ok {
			return a
		}
		switch {
		case l >= slog.LevelError:
			return slog.Attr{}
		case l >= slog.LevelWarn:
			return slog.String("level", "warning")
		case l <= slog.LevelInfo:
			return slog.Int("v", int(slog.LevelInfo-l))
		}
	}
	return a
}
