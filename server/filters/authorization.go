package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/respond"
)

// AttributesFor builds authorization attributes from a request's context.
func AttributesFor(r *http.Request) authz.Attributes {
	a := authz.Attributes{Path: r.URL.Path}
	if u, ok := authn.UserFrom(r.Context()); ok {
		a.User = u
	}
	if info, ok := request.InfoFrom(r.Context()); ok {
		a.Verb = info.Verb
		a.ResourceRequest = info.IsResourceRequest
		a.APIGroup, a.APIVersion = info.APIGroup, info.APIVersion
		a.Resource, a.Subresource = info.Resource, info.Subresource
		a.Namespace, a.Name = info.Namespace, info.Name
	}
	return a
}

// WithAuthorization asks the authorizer about every request; anything but
// Allow is a 403 Status naming the user, the verb and the resource, with the
// authorizer's reason. An authorizer that fails (and does not allow) is a
// 500, as in kube-apiserver: the caller was not judged, so "forbidden"
// would mislead.
func WithAuthorization(h http.Handler, a authz.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := AttributesFor(r)
		start := time.Now()
		decision, reason, err := a.Authorize(r.Context(), attrs)
		metrics.From(r.Context()).ObserveAuthorization(authzResult(decision, err), time.Since(start))
		if decision == authz.DecisionAllow {
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			slog.Warn("authorization error", "path", r.URL.Path, "err", err)
			respond.Error(w, r, meta.NewInternalError(err))
			return
		}
		msg := ForbiddenMessage(attrs)
		if reason != "" {
			msg += ": " + reason
		}
		respond.Error(w, r, meta.NewForbidden(meta.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, fmt.Errorf("%s", msg)))
	})
}

// authzResult is kube-apiserver's label of a decision: an allow is an
// allow even with an error, an error otherwise wins.
func authzResult(d authz.Decision, err error) string {
	switch {
	case d == authz.DecisionAllow:
		return metrics.AuthzAllowed
	case err != nil:
		return metrics.AuthzError
	case d == authz.DecisionDeny:
		return metrics.AuthzDenied
	}
	return metrics.AuthzNoOpinion
}

// ForbiddenMessage phrases a denial as kube-apiserver does.
func ForbiddenMessage(a authz.Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}
