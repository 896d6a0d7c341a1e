package serviceaccounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/internal/k8sproto"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/fieldmanager"
	"github.com/apikit-dev/apikit/server/respond"
)

// TokenRequest is authentication.k8s.io/v1 TokenRequest: posted to a
// service account's token subresource, it comes back with a token.
type TokenRequest struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Spec   TokenRequestSpec   `json:"spec" optional:"true" protobuf:"2"`
	Status TokenRequestStatus `json:"status,omitempty"`
}

// SwaggerDoc describes TokenRequest in OpenAPI, in kube-apiserver's words.
func (TokenRequest) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "TokenRequest requests a token for a given service account.",
		"metadata": "metadata is the standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
		"spec":     "spec holds information about the request being evaluated",
		"status":   "status is filled in by the server and indicates whether the token can be authenticated.",
	}
}

// TokenRequestSpec is what a token is asked for. Audiences,
// expirationSeconds and boundObjectRef are written even when empty (null),
// as kube-apiserver writes them.
type TokenRequestSpec struct {
	Audiences         []string              `json:"audiences" optional:"true" listType:"atomic" protobuf:"1"`
	ExpirationSeconds *int64                `json:"expirationSeconds" optional:"true" protobuf:"4"`
	BoundObjectRef    *BoundObjectReference `json:"boundObjectRef" optional:"true" protobuf:"3"`
}

// SwaggerDoc describes TokenRequestSpec in OpenAPI, in kube-apiserver's words.
func (TokenRequestSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                  "TokenRequestSpec contains client provided parameters of a token request.",
		"audiences":         "audiences are the intendend audiences of the token. A recipient of a token must identify themself with an identifier in the list of audiences of the token, and otherwise should reject the token. A token issued for multiple audiences may be used to authenticate against any of the audiences listed but implies a high degree of trust between the target audiences.",
		"expirationSeconds": "expirationSeconds is the requested duration of validity of the request. The token issuer may return a token with a different validity duration so a client needs to check the 'expiration' field in a response.",
		"boundObjectRef":    "boundObjectRef is a reference to an object that the token will be bound to. The token will only be valid for as long as the bound object exists. NOTE: The API server's TokenReview endpoint will validate the BoundObjectRef, but other audiences may not. Keep ExpirationSeconds small if you want prompt revocation.",
	}
}

// BoundObjectReference is an object a token is bound to.
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty" protobuf:"1"`
	APIVersion string `json:"apiVersion,omitempty" protobuf:"2"`
	Name       string `json:"name,omitempty" protobuf:"3"`
	UID        string `json:"uid,omitempty" protobuf:"4"`
}

// SwaggerDoc describes BoundObjectReference in OpenAPI, in kube-apiserver's
// words.
func (BoundObjectReference) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "BoundObjectReference is a reference to an object that a token is bound to.",
		"kind":       "kind of the referent. Valid kinds are 'Pod', 'Secret', 'Node', 'ValidatingWebhookConfiguration', and 'MutatingWebhookConfiguration'.",
		"apiVersion": "apiVersion is API version of the referent.",
		"name":       "name of the referent.",
		"uid":        "uid of the referent.",
	}
}

// TokenRequestStatus carries the token.
type TokenRequestStatus struct {
	Token               string    `json:"token" optional:"true"`
	ExpirationTimestamp meta.Time `json:"expirationTimestamp" optional:"true"`
}

// SwaggerDoc describes TokenRequestStatus in OpenAPI, in kube-apiserver's
// words.
func (TokenRequestStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                    "TokenRequestStatus is the result of a token request.",
		"token":               "token is the opaque bearer token.",
		"expirationTimestamp": "expirationTimestamp is the time of expiration of the returned token.",
	}
}

// DefaultExpirationSeconds is a TokenRequest's lifetime when it names
// none, as kube-apiserver defaults it: one hour.
const DefaultExpirationSeconds = 3600

// Lifetime bounds of a requested token, as kube-apiserver validates them.
const (
	minExpirationSeconds = 10 * 60
	maxExpirationSeconds = 1 << 32
)

var tokenRequestKind = meta.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}

// TokenRoutes adds POST .../serviceaccounts/{name}/token to the core
// group's WebService, issuing tokens with t. chain admits each request as
// kube-apiserver admits it: a CREATE of kind authentication.k8s.io/v1
// TokenRequest on resource serviceaccounts, subresource token, which
// webhooks and policies may change (mutating) and refuse (validating).
func TokenRoutes(store *registry.Store[*ServiceAccount], t *serviceaccount.Tokens, chain admission.Chain) func(ws *restful.WebService) {
	h := &tokenHandler{store: store, tokens: t, now: time.Now, admission: chain}
	return func(ws *restful.WebService) {
		ws.Route(endpoints.To(ws.POST("/namespaces/{namespace}/serviceaccounts/{name}/token"), h).
			Operation("createCoreV1NamespacedServiceAccountToken").
			Doc("create token of a ServiceAccount").
			Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects").DataType("string")).
			Param(ws.PathParameter("name", "name of the TokenRequest").DataType("string")).
			Consumes("application/json", "application/vnd.kubernetes.protobuf").Produces("application/json").
			Reads(TokenRequest{}).Writes(TokenRequest{}).
			Returns(http.StatusCreated, "Created", TokenRequest{}).
			Metadata(endpoints.MetadataKind, "TokenRequest").
			Metadata(endpoints.MetadataTag, "core_v1"))
	}
}

type tokenHandler struct {
	store     *registry.Store[*ServiceAccount]
	tokens    *serviceaccount.Tokens
	now       func() time.Time
	admission admission.Chain

	// managers records who set a request's fields, built at the first
	// request: an idle server never needs its schema.
	managersOnce sync.Once
	managers     *fieldmanager.Manager
}

// maxTokenRequestBody bounds a TokenRequest's body.
const maxTokenRequestBody = 1 << 20

func (h *tokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	opts, err := meta.ParseCreateOptions(r.URL.Query())
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTokenRequestBody))
	if err != nil {
		respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("reading the request body: %v", err)))
		return
	}
	req, err := decodeTokenRequest(r.Header.Get("Content-Type"), body)
	if err != nil {
		respond.Error(w, r, meta.NewBadRequest(err.Error()))
		return
	}
	// As kube-apiserver's create handler: the fields the request sets,
	// defaults included, are its writer's, recorded before the request is
	// completed (audiences, uid and times are the server's).
	setDefaults(req)
	h.recordFields(req, fieldmanager.ManagerName(opts.FieldManager, r.UserAgent()))
	var warnings []string
	ctx := admission.WithWarnings(r.Context(), func(msg string) { warnings = append(warnings, msg) })
	a, err := h.admit(ctx, ns, name, req, len(opts.DryRun) > 0)
	var out *TokenRequest
	if err == nil {
		out, err = h.issue(ctx, ns, name, a.Object.(*TokenRequest), func(done *TokenRequest) error {
			return h.validate(ctx, a, done)
		})
	}
	warn := respond.WarningsOnce(w)
	for _, msg := range warnings {
		warn(msg)
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusCreated, out)
}

// tokenRequestsGVK and serviceAccountsGVR are what admission sees of a
// token request: kube-apiserver's create handler admits the TokenRequest
// on the service accounts' token subresource.
var (
	tokenRequestGVK    = meta.GroupVersionKind{Group: tokenRequestKind.Group, Version: "v1", Kind: tokenRequestKind.Kind}
	serviceAccountsGVR = meta.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
)

// admit runs the mutating plugins on req as kube-apiserver's create
// handler does, before the token storage sees it: req has its defaults and
// the request's namespace (kube-apiserver sets an empty one), the name is
// the service account's, from the path. The attributes returned carry the
// admitted request, for validate.
func (h *tokenHandler) admit(ctx context.Context, ns, name string, req *TokenRequest, dryRun bool) (*admission.Attributes, error) {
	if req.Namespace == "" {
		req.Namespace = ns
	}
	user, _ := authn.UserFrom(ctx)
	a := &admission.Attributes{Operation: admission.Create, Kind: tokenRequestGVK, Resource: serviceAccountsGVR, Subresource: "token",
		Namespace: ns, Name: name, Object: req, DryRun: dryRun, User: user}
	if len(h.admission) == 0 {
		return a, nil
	}
	if err := h.admission.Admit(ctx, a); err != nil {
		return nil, err
	}
	if _, ok := a.Object.(*TokenRequest); !ok {
		return nil, meta.NewInternalError(fmt.Errorf("admission made the TokenRequest for %s a %T", name, a.Object))
	}
	return a, nil
}

// validate runs the validating plugins on done, the request as the token
// storage completed it (name, namespace, uid, audiences, creation time),
// as kube-apiserver's TokenRequest storage calls them after its own
// validation and before it signs.
func (h *tokenHandler) validate(ctx context.Context, a *admission.Attributes, done *TokenRequest) error {
	if len(h.admission) == 0 {
		return nil
	}
	v := *a
	cp := *done
	v.Object = &cp
	return h.admission.Validate(ctx, &v)
}

// setDefaults applies the defaults kube-apiserver applies as it decodes a
// TokenRequest: an hour's lifetime.
func setDefaults(req *TokenRequest) {
	if req.Spec.ExpirationSeconds == nil {
		d := int64(DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &d
	}
}

// recordFields fills req's managedFields with one Update entry of manager
// on the token subresource. A failure leaves them empty (and is logged):
// the token is issued all the same, as kube-apiserver's UpdateNoErrors.
func (h *tokenHandler) recordFields(req *TokenRequest, manager string) {
	h.managersOnce.Do(func() {
		set := schema.NewSet()
		shape, err := set.AddType(reflect.TypeOf(TokenRequest{}))
		if err == nil {
			h.managers, err = fieldmanager.New(fieldmanager.Config{Schemas: set, Schema: shape,
				GVK: meta.GroupVersionKind{Group: tokenRequestKind.Group, Version: "v1", Kind: tokenRequestKind.Kind}, Subresource: "token",
				New: func() meta.Object { return &TokenRequest{} }})
		}
		if err != nil {
			slog.Error("TokenRequest managedFields unavailable", "err", err)
		}
	})
	req.ManagedFields = nil
	if h.managers == nil {
		return
	}
	if err := h.managers.Update(nil, req, manager); err != nil {
		slog.Error("failed to record a TokenRequest's managedFields", "err", err)
	}
}

// issue completes req as kube-apiserver's TokenRequest storage does (its
// checks in the same order, so that the first error is the same) and signs
// a token for the service account ns/name, bound to its uid.
//
// validate is called on the completed request once it passed the checks,
// before the token is signed: validating admission's place.
func (h *tokenHandler) issue(ctx context.Context, ns, name string, req *TokenRequest, validate func(*TokenRequest) error) (*TokenRequest, error) {
	setDefaults(req)
	if req.Name != "" && req.Name != name {
		return nil, meta.NewInvalid(tokenRequestKind, name, meta.FieldErrors{
			meta.Invalid(meta.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != ns {
		return nil, meta.NewInvalid(tokenRequestKind, name, meta.FieldErrors{
			meta.Invalid(meta.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	// A consistent read: the token is bound to the uid the service
	// account has now.
	sa, _, err := h.store.Get(ctx, ns, name, meta.GetOptions{})
	if err != nil {
		return nil, err
	}
	if req.UID != "" && req.UID != sa.UID {
		// kube-apiserver's TokenRequestServiceAccountUIDValidation, on
		// by default since 1.34.
		return nil, meta.NewConflict(meta.GroupResource{Group: tokenRequestKind.Group, Resource: tokenRequestKind.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if h.tokens == nil || h.tokens.Generator == nil {
		return nil, meta.NewInternalError(errors.New("the server has no service-account signing key"))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = h.tokens.APIAudiences
	}
	req.Name, req.Namespace, req.UID = name, ns, sa.UID
	// The time is taken before the token is signed, so that the expiration
	// reported is never after the token's.
	now := h.now()
	req.CreationTimestamp = meta.NewTime(now.UTC().Truncate(time.Second))
	req.Status = TokenRequestStatus{}

	var errs meta.FieldErrors
	exp := *req.Spec.ExpirationSeconds
	switch {
	case exp < minExpirationSeconds:
		errs = append(errs, meta.Invalid(meta.NewPath("spec", "expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	case exp > maxExpirationSeconds:
		errs = append(errs, meta.Invalid(meta.NewPath("spec", "expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if req.Spec.BoundObjectRef != nil {
		// Pods, secrets and nodes a token may be bound to are not checked
		// by this server's authenticator: refuse rather than pretend.
		errs = append(errs, meta.NotSupported(meta.NewPath("spec", "boundObjectRef", "kind"), req.Spec.BoundObjectRef.Kind, nil))
	}
	if len(errs) > 0 {
		return nil, meta.NewInvalid(tokenRequestKind, "", errs)
	}
	if validate != nil {
		if err := validate(req); err != nil {
			return nil, err
		}
	}
	if sa.DeletionTimestamp != nil {
		return nil, meta.NewForbidden(meta.GroupResource{Resource: "serviceaccounts"}, name,
			fmt.Errorf("service account %s/%s is being deleted", ns, name))
	}
	if max := int64(h.tokens.MaxExpiration / time.Second); max > 0 && exp > max {
		admission.AddWarning(ctx, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", exp, max))
		exp = max
		req.Spec.ExpirationSeconds = &exp
	}
	claims, private := serviceaccount.NewClaims(ns, serviceaccount.Ref{Name: sa.Name, UID: sa.UID}, req.Spec.Audiences, time.Duration(exp)*time.Second, now)
	token, err := h.tokens.Generator.GenerateToken(claims, private)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("signing the token: %w", err))
	}
	out := *req
	out.TypeMeta = meta.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
	out.Status = TokenRequestStatus{Token: token, ExpirationTimestamp: meta.NewTime(claims.Expiry.Time())}
	return &out, nil
}

// tokenRequestProtobuf reads a TokenRequest in protobuf by the protobuf
// tags on its types (k8s.io/api/authentication/v1's field numbers): the
// metadata and the spec, not the status, which is the server's to fill.
var tokenRequestProtobuf = k8sproto.NewDecoder[TokenRequest]("TokenRequest")

// decodeTokenRequest reads a TokenRequest in JSON, or in protobuf as
// kubectl's typed client posts it.
func decodeTokenRequest(contentType string, body []byte) (*TokenRequest, error) {
	if endpoints.IsProtobuf(contentType) {
		var err error
		if body, err = tokenRequestProtobuf.ToJSON(body); err != nil {
			return nil, err
		}
	}
	var req TokenRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decoding the TokenRequest: %w", err)
	}
	return &req, nil
}
