package meta

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// ResourceVersionMatch says how a list's resourceVersion is applied.
type ResourceVersionMatch string

// resourceVersionMatch values.
const (
	ResourceVersionMatchNotOlderThan ResourceVersionMatch = "NotOlderThan"
	ResourceVersionMatchExact        ResourceVersionMatch = "Exact"
)

// ListOptions are the query options of LIST and WATCH requests.
type ListOptions struct {
	LabelSelector        string
	FieldSelector        string
	Watch                bool
	AllowWatchBookmarks  bool
	ResourceVersion      string
	ResourceVersionMatch ResourceVersionMatch
	TimeoutSeconds       *int64
	Limit                int64
	Continue             string
	SendInitialEvents    *bool
}

// GetOptions are the query options of GET requests.
type GetOptions struct {
	ResourceVersion string
}

// DryRunAll is the only dryRun value: run everything but persist nothing.
const DryRunAll = "All"

// Field validation levels (the fieldValidation query parameter).
const (
	FieldValidationIgnore = "Ignore"
	FieldValidationWarn   = "Warn"
	FieldValidationStrict = "Strict"
)

// CreateOptions are the query options of POST requests.
type CreateOptions struct {
	DryRun          []string
	FieldManager    string
	FieldValidation string
}

// UpdateOptions are the query options of PUT requests.
type UpdateOptions struct {
	DryRun          []string
	FieldManager    string
	FieldValidation string
}

// PatchOptions are the query options of PATCH requests.
type PatchOptions struct {
	DryRun          []string
	Force           *bool
	FieldManager    string
	FieldValidation string
}

// DeletionPropagation says how dependents of a deleted object are treated.
type DeletionPropagation string

// Propagation policies.
const (
	DeletePropagationOrphan     DeletionPropagation = "Orphan"
	DeletePropagationBackground DeletionPropagation = "Background"
	DeletePropagationForeground DeletionPropagation = "Foreground"
)

// The finalizers through which a delete asks the garbage collector to
// orphan or delete an object's dependents before the object goes.
const (
	FinalizerOrphanDependents = "orphan"
	FinalizerDeleteDependents = "foregroundDeletion"
)

// Preconditions must hold for a delete to proceed.
type Preconditions struct {
	UID             *string `json:"uid,omitempty"`
	ResourceVersion *string `json:"resourceVersion,omitempty"`
}

// DeleteOptions is the body (or query) of DELETE requests.
type DeleteOptions struct {
	TypeMeta           `json:",inline"`
	GracePeriodSeconds *int64               `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *Preconditions       `json:"preconditions,omitempty"`
	OrphanDependents   *bool                `json:"orphanDependents,omitempty"`
	PropagationPolicy  *DeletionPropagation `json:"propagationPolicy,omitempty"`
	DryRun             []string             `json:"dryRun,omitempty"`
}

// validateDryRun refuses dryRun values other than All, as kube-apiserver's
// ValidateDryRun does (a 422 naming the options' kind).
func validateDryRun(dryRun []string) FieldErrors {
	for _, v := range dryRun {
		if v != DryRunAll {
			return FieldErrors{NotSupported(NewPath("dryRun"), dryRun, []string{DryRunAll})}
		}
	}
	return nil
}

// invalidOptions is the 422 of a kind of options (CreateOptions...).
func invalidOptions(kind string, errs FieldErrors) error {
	return NewInvalid(GroupKind{Group: "meta.k8s.io", Kind: kind}, "", errs)
}

// parseBool reads a boolean query parameter as Kubernetes' conversion of
// query parameters does: "0" and "false" (in any case) are false, and any
// other value, including none at all ("?watch"), is true. It never fails;
// ok reports whether the parameter was given.
func parseBool(q url.Values, name string) (value, ok bool) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false, false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false"), true
}

func parseInt(q url.Values, name string) (int64, bool, error) {
	v := q.Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, true, NewBadRequest(fmt.Sprintf("invalid value %q for query parameter %s: must be an integer", v, name))
	}
	return n, true, nil
}

// ParseListOptions reads list and watch options from a query and validates
// them as kube-apiserver does; failures are BadRequest or Invalid Status errors.
func ParseListOptions(q url.Values) (ListOptions, error) {
	var o ListOptions
	var err error
	o.LabelSelector = q.Get("labelSelector")
	o.FieldSelector = q.Get("fieldSelector")
	o.Watch, _ = parseBool(q, "watch")
	o.AllowWatchBookmarks, _ = parseBool(q, "allowWatchBookmarks")
	o.ResourceVersion = q.Get("resourceVersion")
	o.ResourceVersionMatch = ResourceVersionMatch(q.Get("resourceVersionMatch"))
	if t, ok, err := parseInt(q, "timeoutSeconds"); err != nil {
		return o, err
	} else if ok {
		o.TimeoutSeconds = &t
	}
	if o.Limit, _, err = parseInt(q, "limit"); err != nil {
		return o, err
	}
	if o.Limit < 0 {
		// kube-apiserver lists everything for a negative limit, as for
		// none.
		o.Limit = 0
	}
	o.Continue = q.Get("continue")
	if b, ok := parseBool(q, "sendInitialEvents"); ok {
		o.SendInitialEvents = &b
	}
	if errs := o.Validate(); len(errs) > 0 {
		return o, NewInvalid(GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", errs)
	}
	return o, nil
}

// Validate checks the combinations kube-apiserver forbids.
func (o *ListOptions) Validate() FieldErrors {
	var errs FieldErrors
	matchPath := NewPath("resourceVersionMatch")
	if o.Watch {
		if o.SendInitialEvents != nil {
			if o.ResourceVersionMatch != ResourceVersionMatchNotOlderThan {
				errs = append(errs, Forbidden(matchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
		}
		if o.ResourceVersionMatch != "" {
			if o.SendInitialEvents == nil {
				errs = append(errs, Forbidden(matchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if o.ResourceVersionMatch != ResourceVersionMatchNotOlderThan {
				errs = append(errs, NotSupported(matchPath, string(o.ResourceVersionMatch), []string{string(ResourceVersionMatchNotOlderThan)}))
			}
			if o.Continue != "" {
				errs = append(errs, Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
			}
		}
		return errs
	}
	if m := o.ResourceVersionMatch; m != "" {
		if o.ResourceVersion == "" {
			errs = append(errs, Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if o.Continue != "" {
			errs = append(errs, Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
		}
		if m != ResourceVersionMatchExact && m != ResourceVersionMatchNotOlderThan {
			errs = append(errs, NotSupported(matchPath, string(m), []string{string(ResourceVersionMatchExact), string(ResourceVersionMatchNotOlderThan), ""}))
		}
		if m == ResourceVersionMatchExact && o.ResourceVersion == "0" {
			errs = append(errs, Forbidden(matchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	if o.SendInitialEvents != nil {
		errs = append(errs, Forbidden(NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	return errs
}

// ParseGetOptions reads GET options from a query.
func ParseGetOptions(q url.Values) GetOptions {
	return GetOptions{ResourceVersion: q.Get("resourceVersion")}
}

func parseWriteCommon(q url.Values, kind string) (dryRun []string, manager, validation string, err error) {
	// As kube-apiserver's ValidateCreateOptions (and Update, Patch): every
	// problem of the options in one 422 Invalid, fieldManager first.
	dryRun, manager, validation = q["dryRun"], q.Get("fieldManager"), q.Get("fieldValidation")
	var errs FieldErrors
	if p := NewPath("fieldManager"); len(manager) > 128 {
		errs = append(errs, TooLong(p, manager, 128))
	}
	for i, r := range manager {
		if !unicode.IsPrint(r) {
			errs = append(errs, Invalid(NewPath("fieldManager"), manager, fmt.Sprintf("invalid character %#U (at position %d)", r, i)))
		}
	}
	errs = append(errs, validateDryRun(dryRun)...)
	switch validation {
	case "", FieldValidationIgnore, FieldValidationWarn, FieldValidationStrict:
	default:
		errs = append(errs, NotSupported(NewPath("fieldValidation"), validation,
			[]string{"", FieldValidationIgnore, FieldValidationStrict, FieldValidationWarn}))
	}
	if len(errs) > 0 {
		return nil, "", "", invalidOptions(kind, errs)
	}
	return dryRun, manager, validation, nil
}

// ParseCreateOptions reads POST options from a query.
func ParseCreateOptions(q url.Values) (CreateOptions, error) {
	d, m, v, err := parseWriteCommon(q, "CreateOptions")
	return CreateOptions{DryRun: d, FieldManager: m, FieldValidation: v}, err
}

// ParseUpdateOptions reads PUT options from a query.
func ParseUpdateOptions(q url.Values) (UpdateOptions, error) {
	d, m, v, err := parseWriteCommon(q, "UpdateOptions")
	return UpdateOptions{DryRun: d, FieldManager: m, FieldValidation: v}, err
}

// ParsePatchOptions reads PATCH options from a query.
func ParsePatchOptions(q url.Values) (PatchOptions, error) {
	d, m, v, err := parseWriteCommon(q, "PatchOptions")
	o := PatchOptions{DryRun: d, FieldManager: m, FieldValidation: v}
	if err != nil {
		return o, err
	}
	if b, ok := parseBool(q, "force"); ok {
		o.Force = &b
	}
	return o, nil
}

// ParseDeleteQuery merges DELETE options given as query parameters into o
// (kubectl sends them in the body; curl users often use the query).
func ParseDeleteQuery(q url.Values, o *DeleteOptions) error {
	if g, ok, err := parseInt(q, "gracePeriodSeconds"); err != nil {
		return err
	} else if ok {
		o.GracePeriodSeconds = &g
	}
	if p := q.Get("propagationPolicy"); p != "" {
		pp := DeletionPropagation(p)
		o.PropagationPolicy = &pp
	}
	if b, ok := parseBool(q, "orphanDependents"); ok {
		o.OrphanDependents = &b
	}
	if d := q["dryRun"]; len(d) > 0 {
		o.DryRun = d
	}
	// kube-apiserver's ValidateDeleteOptions, in its order.
	var errs FieldErrors
	policyPath := NewPath("propagationPolicy")
	if p := o.PropagationPolicy; p != nil {
		if o.OrphanDependents != nil {
			errs = append(errs, Invalid(policyPath, string(*p), "orphanDependents and deletionPropagation cannot be both set"))
		}
		switch *p {
		case DeletePropagationOrphan, DeletePropagationBackground, DeletePropagationForeground:
		default:
			errs = append(errs, NotSupported(policyPath, string(*p),
				[]string{string(DeletePropagationForeground), string(DeletePropagationBackground), string(DeletePropagationOrphan), "nil"}))
		}
	}
	errs = append(errs, validateDryRun(o.DryRun)...)
	if len(errs) > 0 {
		return invalidOptions("DeleteOptions", errs)
	}
	return nil
}
