package serviceaccounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/internal/k8sproto"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/respond"
)

// TokenRequest is authentication.k8s.io/v1 TokenRequest: posted to a
// service account's token subresource, it comes back with a token.
type TokenRequest struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Spec   TokenRequestSpec   `json:"spec" description:"Spec holds information about the request being evaluated" protobuf:"2"`
	Status TokenRequestStatus `json:"status,omitempty" description:"Status is filled in by the server and indicates whether the token can be authenticated."`
}

// SwaggerDoc describes TokenRequest in OpenAPI.
func (TokenRequest) SwaggerDoc() map[string]string {
	return map[string]string{"": "TokenRequest requests a token for a given service account."}
}

// TokenRequestSpec is what a token is asked for.
type TokenRequestSpec struct {
	Audiences         []string              `json:"audiences" listType:"atomic" description:"Audiences are the intendend audiences of the token." protobuf:"1"`
	ExpirationSeconds *int64                `json:"expirationSeconds,omitempty" description:"ExpirationSeconds is the requested duration of validity of the request." protobuf:"4"`
	BoundObjectRef    *BoundObjectReference `json:"boundObjectRef,omitempty" description:"BoundObjectRef is a reference to an object that the token will be bound to." protobuf:"3"`
}

// BoundObjectReference is an object a token is bound to.
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty" description:"Kind of the referent. Valid kinds are 'Pod' and 'Secret'." protobuf:"1"`
	APIVersion string `json:"apiVersion,omitempty" description:"API version of the referent." protobuf:"2"`
	Name       string `json:"name,omitempty" description:"Name of the referent." protobuf:"3"`
	UID        string `json:"uid,omitempty" description:"UID of the referent." protobuf:"4"`
}

// TokenRequestStatus carries the token.
type TokenRequestStatus struct {
	Token               string    `json:"token" description:"Token is the opaque bearer token."`
	ExpirationTimestamp meta.Time `json:"expirationTimestamp" description:"ExpirationTimestamp is the time of expiration of the returned token."`
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
// group's WebService, issuing tokens with t.
func TokenRoutes(store *registry.Store[*ServiceAccount], t *serviceaccount.Tokens) func(ws *restful.WebService) {
	h := &tokenHandler{store: store, tokens: t, now: time.Now}
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
	store  *registry.Store[*ServiceAccount]
	tokens *serviceaccount.Tokens
	now    func() time.Time
}

// maxTokenRequestBody bounds a TokenRequest's body.
const maxTokenRequestBody = 1 << 20

func (h *tokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
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
	out, err := h.issue(r.Context(), ns, name, req)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusCreated, out)
}

// issue validates req as kube-apiserver does and signs a token for the
// service account ns/name, bound to its uid.
func (h *tokenHandler) issue(ctx context.Context, ns, name string, req *TokenRequest) (*TokenRequest, error) {
	if req.Spec.ExpirationSeconds == nil {
		d := int64(DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &d
	}
	var errs meta.FieldErrors
	if req.Name != "" && req.Name != name {
		errs = append(errs, meta.Invalid(meta.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != ns {
		errs = append(errs, meta.Invalid(meta.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}
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
	if h.tokens == nil || h.tokens.Generator == nil {
		return nil, meta.NewInternalError(errors.New("the server has no service-account signing key"))
	}
	// A consistent read: the token is bound to the uid the service
	// account has now.
	sa, _, err := h.store.Get(ctx, ns, name, meta.GetOptions{})
	if err != nil {
		return nil, err
	}
	if sa.DeletionTimestamp != nil {
		return nil, meta.NewForbidden(meta.GroupResource{Resource: "serviceaccounts"}, name,
			fmt.Errorf("service account %s/%s is being deleted", ns, name))
	}
	auds := req.Spec.Audiences
	if len(auds) == 0 {
		auds = h.tokens.APIAudiences
	}
	lifetime := time.Duration(exp) * time.Second
	if max := h.tokens.MaxExpiration; max > 0 && lifetime > max {
		lifetime = max
	}
	now := h.now()
	claims, private := serviceaccount.NewClaims(ns, serviceaccount.Ref{Name: sa.Name, UID: sa.UID}, auds, lifetime, now)
	token, err := h.tokens.Generator.GenerateToken(claims, private)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("signing the token: %w", err))
	}
	out := *req
	out.TypeMeta = meta.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
	out.Name, out.Namespace = name, ns
	out.Spec.Audiences = auds
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
