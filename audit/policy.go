package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The levels of an audit Policy, least to most.
const (
	// LevelNone records nothing.
	LevelNone = "None"
	// LevelRequest records the metadata and the request's body.
	LevelRequest = "Request"
	// LevelRequestResponse records the metadata and both bodies.
	LevelRequestResponse = "RequestResponse"
)

// Policy is an audit.k8s.io/v1 Policy (--audit-policy-file): the first
// rule a request matches gives its level, and no match means None, as in
// kube-apiserver.
type Policy struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Rules      []PolicyRule `json:"rules"`
	// OmitStages are stages never recorded, for every rule.
	OmitStages []string `json:"omitStages,omitempty"`
	// OmitManagedFields is accepted for compatibility: apikit records no
	// managedFields (it keeps none).
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule matches requests and gives them a level. An empty list
// matches everything; a rule with resources or namespaces matches resource
// requests only, one with nonResourceURLs non-resource requests only.
type PolicyRule struct {
	Level      string   `json:"level"`
	Users      []string `json:"users,omitempty"`
	UserGroups []string `json:"userGroups,omitempty"`
	Verbs      []string `json:"verbs,omitempty"`
	// Resources match a group ("" is the core group) and resource names
	// as kube-apiserver reads them: "flunders", "flunders/status",
	// "flunders/*", "*/status", "*".
	Resources []GroupResources `json:"resources,omitempty"`
	// Namespaces: "" matches cluster-scoped resources.
	Namespaces []string `json:"namespaces,omitempty"`
	// NonResourceURLs: exact paths, or prefixes ending in "*".
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	OmitStages      []string `json:"omitStages,omitempty"`
	// OmitManagedFields is accepted for compatibility (see Policy).
	OmitManagedFields *bool `json:"omitManagedFields,omitempty"`
}

// GroupResources names resources of one API group.
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// PolicyChecker gives a request its audit level and the stages to leave
// out; *Policy is one.
type PolicyChecker interface {
	LevelOf(Attributes) (level string, omitStages []string)
}

// Attributes are what a policy looks at in a request.
type Attributes struct {
	User              string
	Groups            []string
	Verb              string
	IsResourceRequest bool
	APIGroup          string
	Resource          string
	Subresource       string
	Namespace         string
	Name              string
	Path              string
}

// ReadPolicyFile reads a Policy from a YAML or JSON file.
func ReadPolicyFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy reads and checks a Policy (YAML or JSON). Unknown fields are
// errors: a misspelt field would otherwise widen or narrow a rule silently.
func ParsePolicy(data []byte) (*Policy, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading the audit policy: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("reading the audit policy: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

var (
	levels = []string{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}
	stages = []string{StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic}
)

func (p *Policy) validate() error {
	var errs []error
	if p.Kind != "Policy" || (p.APIVersion != "audit.k8s.io/v1" && p.APIVersion != "audit.k8s.io/v1beta1") {
		errs = append(errs, fmt.Errorf("the audit policy is %s %s, want audit.k8s.io/v1 Policy", p.APIVersion, p.Kind))
	}
	if len(p.Rules) == 0 {
		errs = append(errs, errors.New("the audit policy has no rules (it would record nothing)"))
	}
	errs = append(errs, checkStages("omitStages", p.OmitStages)...)
	for i, r := range p.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if !slices.Contains(levels, r.Level) {
			errs = append(errs, fmt.Errorf("%s.level: %q is not one of %s", at, r.Level, strings.Join(levels, ", ")))
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, fmt.Errorf("%s: rules cannot apply to both regular resources and non-resource URLs", at))
		}
		for j, u := range r.NonResourceURLs {
			if !strings.HasPrefix(u, "/") && u != "*" {
				errs = append(errs, fmt.Errorf("%s.nonResourceURLs[%d]: %q must start with /", at, j, u))
			}
			if k := strings.Index(u, "*"); k >= 0 && k != len(u)-1 {
				errs = append(errs, fmt.Errorf("%s.nonResourceURLs[%d]: %q may have a * only at its end", at, j, u))
			}
		}
		for j, g := range r.Resources {
			if len(g.ResourceNames) > 0 && slices.ContainsFunc(g.Resources, func(s string) bool { return strings.Contains(s, "*") }) {
				errs = append(errs, fmt.Errorf("%s.resources[%d]: resourceNames cannot go with a wildcard resource", at, j))
			}
		}
		errs = append(errs, checkStages(at+".omitStages", r.OmitStages)...)
	}
	return errors.Join(errs...)
}

func checkStages(at string, list []string) []error {
	var errs []error
	for _, s := range list {
		if !slices.Contains(stages, s) {
			errs = append(errs, fmt.Errorf("%s: %q is not a stage (%s)", at, s, strings.Join(stages, ", ")))
		}
	}
	return errs
}

// LevelOf returns the level of the first rule a matches (None when none
// does) and the stages it leaves out.
func (p *Policy) LevelOf(a Attributes) (level string, omitStages []string) {
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.matches(a) {
			return r.Level, append(slices.Clip(p.OmitStages), r.OmitStages...)
		}
	}
	return LevelNone, nil
}

func (r *PolicyRule) matches(a Attributes) bool {
	if len(r.Users) > 0 && !slices.Contains(r.Users, a.User) {
		return false
	}
	if len(r.UserGroups) > 0 && !slices.ContainsFunc(a.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) }) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.Resources) > 0 || len(r.Namespaces) > 0 {
		if !a.IsResourceRequest {
			return false
		}
		if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
			return false
		}
		if len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, func(g GroupResources) bool { return g.matches(a) }) {
			return false
		}
	}
	if len(r.NonResourceURLs) > 0 {
		if a.IsResourceRequest {
			return false
		}
		if !slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			return u == "*" || u == a.Path || strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimSuffix(u, "*"))
		}) {
			return false
		}
	}
	return true
}

// matches follows kube-apiserver's audit policy checker: "res",
// "res/sub", "*", "*/sub", and "res/*", which matches res itself too.
func (g GroupResources) matches(a Attributes) bool {
	if g.Group != a.APIGroup {
		return false
	}
	if len(g.Resources) == 0 {
		return true
	}
	full := a.Resource
	if a.Subresource != "" {
		full += "/" + a.Subresource
	}
	for _, res := range g.Resources {
		switch {
		case res == "*",
			res == full,
			res == a.Resource+"/*",
			a.Subresource != "" && res == "*/"+a.Subresource:
		default:
			continue
		}
		if len(g.ResourceNames) == 0 || slices.Contains(g.ResourceNames, a.Name) {
			return true
		}
	}
	return false
}
