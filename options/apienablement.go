package options

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
)

// Keys of --runtime-config that select many group-versions at once.
const (
	APIAll   = "api/all"
	APIGA    = "api/ga"
	APIBeta  = "api/beta"
	APIAlpha = "api/alpha"
)

// maturity matches the versions api/ga, api/beta and api/alpha select.
var maturity = []struct {
	key string
	re  *regexp.Regexp
}{
	{APIGA, regexp.MustCompile(`^v\d+$`)},
	{APIBeta, regexp.MustCompile(`^v\d+beta\d+$`)},
	{APIAlpha, regexp.MustCompile(`^v\d+alpha\d+$`)},
}

// RuntimeConfig is the value of --runtime-config: key=value pairs, comma
// separated, the flag repeatable. A key without a value means true.
type RuntimeConfig map[string]string

// Set adds the pairs in value.
func (rc RuntimeConfig) Set(value string) error {
	for _, s := range strings.Split(value, ",") {
		if s == "" {
			continue
		}
		k, v, _ := strings.Cut(s, "=")
		rc[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

// String writes the pairs back, sorted: Set(String()) rebuilds rc.
func (rc RuntimeConfig) String() string {
	pairs := make([]string, 0, len(rc))
	for k, v := range rc {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// Type names the flag's type in --help.
func (rc RuntimeConfig) Type() string { return "mapStringString" }

// Normalize rewrites the keys of the legacy core API as kube-apiserver
// does: v1, v1/..., api/v1 and api/v1/... become /v1; api/legacy goes.
func (rc RuntimeConfig) Normalize() {
	for key, value := range rc {
		if key == "v1" || strings.HasPrefix(key, "v1/") || key == "api/v1" || strings.HasPrefix(key, "api/v1/") {
			delete(rc, key)
			rc["/v1"] = value
		}
		if key == "api/legacy" {
			delete(rc, key)
		}
	}
}

func boolValue(key, v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("invalid value of %s: %s, err: %v", key, v, err)
	}
	return b, nil
}

func isMatcher(key string) bool {
	if key == APIAll {
		return true
	}
	for _, m := range maturity {
		if key == m.key {
			return true
		}
	}
	return false
}

// APIEnablementOptions turn group-versions on and off (--runtime-config).
type APIEnablementOptions struct {
	RuntimeConfig RuntimeConfig

	mu    sync.Mutex
	asked map[string]bool
}

// NewAPIEnablementOptions returns the default: every group-version the
// server installs is served.
func NewAPIEnablementOptions() *APIEnablementOptions {
	return &APIEnablementOptions{RuntimeConfig: RuntimeConfig{}}
}

// AddFlags adds --runtime-config.
func (o *APIEnablementOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Var(o.RuntimeConfig, "runtime-config",
		"A set of key=value pairs that enable or disable built-in APIs. Supported options are:\n"+
			"<group>/<version>=true|false controls a specific API version\n"+
			"api/all=true|false controls all API versions\n"+
			"api/ga=true|false controls all API versions of the form v[0-9]+\n"+
			"api/beta=true|false controls all API versions of the form v[0-9]+beta[0-9]+\n"+
			"api/alpha=true|false controls all API versions of the form v[0-9]+alpha[0-9]+\n"+
			"A specific version wins over api/ga, api/beta and api/alpha, which win over api/all.")
}

// Validate checks the keys and values, with kube-apiserver's messages.
func (o *APIEnablementOptions) Validate() []error {
	rc := RuntimeConfig{}
	for k, v := range o.RuntimeConfig {
		rc[k] = v
	}
	rc.Normalize()
	if rc[APIAll] == "false" && len(rc) == 1 {
		// A server serving nothing has no reason to start.
		return []error{fmt.Errorf("invalid key with only %v=false", APIAll)}
	}
	var errs []error
	keys := make([]string, 0, len(rc))
	for k := range rc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if _, err := boolValue(key, rc[key]); err != nil {
			errs = append(errs, err)
		}
		if isMatcher(key) {
			continue
		}
		tokens := strings.Split(key, "/")
		switch {
		case len(tokens) == 3:
			errs = append(errs, fmt.Errorf("runtime-config invalid key %s: single resources cannot be enabled or disabled, only <group>/<version>", key))
		case len(tokens) != 2 || tokens[1] == "":
			errs = append(errs, fmt.Errorf("runtime-config invalid key %s", key))
		}
	}
	return errs
}

// Complete normalises the legacy keys.
func (o *APIEnablementOptions) Complete() { o.RuntimeConfig.Normalize() }

// Enabled reports whether gv is served: its own key decides, else
// api/ga, api/beta or api/alpha by its version's form, else api/all, else
// it is. It remembers gv's group for UnknownGroups.
func (o *APIEnablementOptions) Enabled(gv meta.GroupVersion) bool {
	o.mu.Lock()
	if o.asked == nil {
		o.asked = map[string]bool{}
	}
	o.asked[gv.Group] = true
	o.mu.Unlock()
	rc := o.RuntimeConfig
	key := gv.Group + "/" + gv.Version
	if v, ok := rc[key]; ok {
		b, _ := boolValue(key, v)
		return b
	}
	enabled := true
	if v, ok := rc[APIAll]; ok {
		enabled, _ = boolValue(APIAll, v)
	}
	for _, m := range maturity {
		if v, ok := rc[m.key]; ok && m.re.MatchString(gv.Version) {
			enabled, _ = boolValue(m.key, v)
		}
	}
	return enabled
}

// UnknownGroups lists the groups --runtime-config names that the server
// never asked about (a typo, or a group it does not serve), sorted.
func (o *APIEnablementOptions) UnknownGroups() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[string]bool{}
	var unknown []string
	for key := range o.RuntimeConfig {
		if isMatcher(key) {
			continue
		}
		group, _, _ := strings.Cut(key, "/")
		if group == "" || o.asked[group] || seen[group] {
			continue // "" is the legacy core API, which apikit does not serve
		}
		seen[group] = true
		unknown = append(unknown, group)
	}
	sort.Strings(unknown)
	return unknown
}

// ApplyTo makes InstallAPIGroup ask Enabled about every group-version.
func (o *APIEnablementOptions) ApplyTo(c *server.Config) error {
	c.APIEnabled = o.Enabled
	return nil
}
