package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// The headers of impersonation, as kubectl --as, --as-uid, --as-group and
// client-go's ImpersonationConfig send them.
const (
	ImpersonateUserHeader        = "Impersonate-User"
	ImpersonateUIDHeader         = "Impersonate-Uid"
	ImpersonateGroupHeader       = "Impersonate-Group"
	ImpersonateExtraHeaderPrefix = "Impersonate-Extra-"
)

// impersonationGroup is the API group of the uids and userextras
// impersonation is authorized on.
const impersonationGroup = "authentication.k8s.io"

// WithImpersonation lets a request act as another user: Impersonate-User
// names the user, Impersonate-Uid its UID, Impersonate-Group (repeatable)
// its groups and Impersonate-Extra-<key> its extra values. Each is allowed
// only if the authorizer allows the requesting user the verb impersonate
// on it, as kube-apiserver asks: users (or serviceaccounts, for
// system:serviceaccount:<ns>:<name>) and groups in the core group, uids
// and userextras (the key as subresource) in authentication.k8s.io. The
// first refusal is a 403 naming what was refused; groups, UID or extra
// without a user is a 400. The impersonated user gets system:authenticated
// (system:unauthenticated for system:anonymous) unless it is among the
// requested groups, and a service account impersonated without groups
// gets its own. The headers are removed, and the audit event records whom
// the request acts as.
func WithImpersonation(h http.Handler, a authz.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := parseImpersonation(r.Header)
		if err != nil {
			respond.Error(w, r, meta.NewBadRequest(err.Error()))
			return
		}
		if req == nil {
			h.ServeHTTP(w, r)
			return
		}
		requestor, ok := authn.UserFrom(r.Context())
		if !ok {
			respond.Error(w, r, meta.NewInternalError(errors.New("no user found for request")))
			return
		}
		for _, attrs := range req.attributes(requestor) {
			decision, reason, err := a.Authorize(r.Context(), attrs)
			if decision == authz.DecisionAllow {
				continue
			}
			if err != nil {
				slog.Warn("authorizing impersonation", "user", requestor.Name, "err", err)
			}
			msg := ForbiddenMessage(attrs)
			if reason != "" {
				msg += ": " + reason
			}
			respond.Error(w, r, meta.NewForbidden(meta.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, errors.New(msg)))
			return
		}
		u := req.user()
		for name := range r.Header {
			if isImpersonationHeader(name) {
				delete(r.Header, name)
			}
		}
		audit.LogImpersonatedUser(r.Context(), audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
		h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), u)))
	})
}

// impersonation is what a request asks to act as.
type impersonation struct {
	name        string
	uid         string
	hasUID      bool
	groups      []string
	groupsGiven bool
	extra       map[string][]string
	extraKeys   []string // sorted, for a stable authorization order
	saNamespace string   // set when the user is a service account
	saName      string
}

// parseImpersonation reads the Impersonate-* headers; nil means none.
func parseImpersonation(h http.Header) (*impersonation, error) {
	var req impersonation
	for name, values := range h {
		switch {
		case strings.EqualFold(name, ImpersonateUserHeader):
			req.name = firstNonEmpty(values)
		case strings.EqualFold(name, ImpersonateUIDHeader):
			req.uid, req.hasUID = firstNonEmpty(values), true
		case strings.EqualFold(name, ImpersonateGroupHeader):
			req.groups = append(req.groups, values...)
			req.groupsGiven = true
		default:
			key, ok := ImpersonationExtraKey(name)
			if !ok {
				continue
			}
			if key == "" {
				return nil, fmt.Errorf("%s<key> headers need a key", ImpersonateExtraHeaderPrefix)
			}
			if req.extra == nil {
				req.extra = map[string][]string{}
			}
			if _, seen := req.extra[key]; !seen {
				req.extraKeys = append(req.extraKeys, key)
			}
			req.extra[key] = append(req.extra[key], values...)
		}
	}
	if req.name == "" {
		if req.groupsGiven || req.hasUID || req.extra != nil {
			return nil, errors.New("requested impersonation of groups, a UID or extra values without impersonating a user (Impersonate-User)")
		}
		return nil, nil
	}
	slices.Sort(req.extraKeys)
	if ns, name, ok := splitServiceAccount(req.name); ok {
		req.saNamespace, req.saName = ns, name
	}
	// A copy, so that req stays on the stack of the requests that
	// impersonate nobody (nearly all).
	out := req
	return &out, nil
}

// ImpersonationExtraKey returns the extra key an Impersonate-Extra-<key>
// header name carries: the rest of the name, lower-cased (header names are
// case-insensitive) and URL-unescaped (so that keys such as
// "example.com/scopes" can travel as "example.com%2fscopes"). ok is false
// for other headers.
func ImpersonationExtraKey(header string) (key string, ok bool) {
	p := ImpersonateExtraHeaderPrefix
	if len(header) < len(p) || !strings.EqualFold(header[:len(p)], p) {
		return "", false
	}
	return authn.UnescapeExtraKey(strings.ToLower(header[len(p):])), true
}

func isImpersonationHeader(name string) bool {
	if _, ok := ImpersonationExtraKey(name); ok {
		return true
	}
	for _, h := range []string{ImpersonateUserHeader, ImpersonateUIDHeader, ImpersonateGroupHeader} {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

// attributes lists what must be authorized, in kube-apiserver's order:
// the user, the groups, the extra values, the UID.
func (req *impersonation) attributes(requestor *authn.User) []authz.Attributes {
	base := authz.Attributes{User: requestor, Verb: "impersonate", ResourceRequest: true}
	var out []authz.Attributes
	u := base
	if req.saName != "" {
		u.Resource, u.Namespace, u.Name = "serviceaccounts", req.saNamespace, req.saName
	} else {
		u.Resource, u.Name = "users", req.name
	}
	out = append(out, u)
	for _, g := range req.groups {
		a := base
		a.Resource, a.Name = "groups", g
		out = append(out, a)
	}
	for _, k := range req.extraKeys {
		for _, v := range req.extra[k] {
			a := base
			a.APIGroup, a.Resource, a.Subresource, a.Name = impersonationGroup, "userextras", k, v
			out = append(out, a)
		}
	}
	if req.hasUID {
		a := base
		a.APIGroup, a.Resource, a.Name = impersonationGroup, "uids", req.uid
		out = append(out, a)
	}
	return out
}

// user is the impersonated user, with kube-apiserver's group rules.
func (req *impersonation) user() *authn.User {
	groups := append([]string(nil), req.groups...)
	if req.saName != "" && !req.groupsGiven {
		groups = []string{serviceaccount.AllServiceAccountsGroup, serviceaccount.NamespaceGroupPrefix + req.saNamespace}
	}
	u := &authn.User{Name: req.name, UID: req.uid, Groups: groups, Extra: req.extra}
	if req.name == authn.Anonymous {
		if !u.InGroup(authn.AllUnauthenticated) {
			u.Groups = append(u.Groups, authn.AllUnauthenticated)
		}
	} else if !u.InGroup(authn.AllAuthenticated) && !u.InGroup(authn.AllUnauthenticated) {
		u.Groups = append(u.Groups, authn.AllAuthenticated)
	}
	return u
}

// splitServiceAccount splits system:serviceaccount:<ns>:<name>.
func splitServiceAccount(user string) (ns, name string, ok bool) {
	rest, found := strings.CutPrefix(user, serviceaccount.UsernamePrefix)
	if !found {
		return "", "", false
	}
	ns, name, found = strings.Cut(rest, ":")
	if !found || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return ns, name, true
}

func firstNonEmpty(values []string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
