package review_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// fake allows alice to get flunders, denies mallory, and lists one rule.
type fake struct{}

func (fake) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	switch {
	case a.User.Name == "mallory":
		return authz.DecisionDeny, "banned", nil
	case a.User.Name == "alice" && a.Verb == "get" && a.Resource == "flunders" && a.Namespace == "ns":
		return authz.DecisionAllow, "alice may", nil
	}
	return authz.DecisionNoOpinion, "", nil
}

func (fake) RulesFor(_ context.Context, u *authn.User, ns string) ([]authz.ResourceRuleInfo, []authz.NonResourceRuleInfo, bool, error) {
	return []authz.ResourceRuleInfo{{Verbs: []string{"get"}, APIGroups: []string{"g"}, Resources: []string{u.Name + "-" + ns}}}, nil, true, nil
}

func resources(t testing.TB) map[string]registry.Resource {
	t.Helper()
	rs, err := review.Resources(fake{}, fake{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]registry.Resource{}
	for _, r := range rs {
		m[r.Info().Resource] = r
		if !r.Info().Serves("create") || r.Info().Serves("get") {
			t.Errorf("%s verbs %v", r.Info().Resource, r.Info().Verbs)
		}
	}
	return m
}

func TestReviews(t *testing.T) {
	rs := resources(t)
	alice := authn.WithUser(context.Background(), &authn.User{Name: "alice"})
	flunders := &review.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "wardle.example.com", Resource: "flunders"}

	it, err := rs["selfsubjectaccessreviews"].Create(alice, "", &review.SelfSubjectAccessReview{Spec: review.SelfSubjectAccessReviewSpec{ResourceAttributes: flunders}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := object(t, it).(*review.SelfSubjectAccessReview).Status; !st.Allowed || st.Reason != "alice may" {
		t.Errorf("self review: %+v", st)
	}
	it, err = rs["subjectaccessreviews"].Create(alice, "", &review.SubjectAccessReview{Spec: review.SubjectAccessReviewSpec{User: "mallory", ResourceAttributes: flunders}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := object(t, it).(*review.SubjectAccessReview).Status; st.Allowed || !st.Denied || st.Reason != "banned" {
		t.Errorf("mallory: %+v", st)
	}
	it, err = rs["localsubjectaccessreviews"].Create(alice, "ns", &review.LocalSubjectAccessReview{Spec: review.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: flunders}}, registry.WriteOptions{})
	if err != nil || !object(t, it).(*review.LocalSubjectAccessReview).Status.Allowed {
		t.Errorf("local review: %v %+v", err, object(t, it))
	}
	if _, err := rs["localsubjectaccessreviews"].Create(alice, "other", &review.LocalSubjectAccessReview{Spec: review.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: flunders}}, registry.WriteOptions{}); !meta.IsBadRequest(err) ||
		err.Error() != "spec.resourceAttributes.namespace must match namespace: other" {
		t.Errorf("local review in another namespace: %v", err)
	}
	it, err = rs["selfsubjectrulesreviews"].Create(alice, "", &review.SelfSubjectRulesReview{Spec: review.SelfSubjectRulesReviewSpec{Namespace: "ns"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := object(t, it).(*review.SelfSubjectRulesReview).Status; len(st.ResourceRules) != 1 || st.ResourceRules[0].Resources[0] != "alice-ns" || !st.Incomplete || st.NonResourceRules == nil {
		t.Errorf("rules review: %+v", st)
	}
	for name, tc := range map[string]struct {
		resource string
		obj      meta.Object
		want     string
	}{
		"no attributes":   {"subjectaccessreviews", &review.SubjectAccessReview{Spec: review.SubjectAccessReviewSpec{User: "a"}}, "exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		"both attributes": {"selfsubjectaccessreviews", &review.SelfSubjectAccessReview{Spec: review.SelfSubjectAccessReviewSpec{ResourceAttributes: flunders, NonResourceAttributes: &review.NonResourceAttributes{Path: "/"}}}, "cannot be specified in combination with resourceAttributes"},
		"no subject":      {"subjectaccessreviews", &review.SubjectAccessReview{Spec: review.SubjectAccessReviewSpec{ResourceAttributes: flunders}}, "at least one of user or group must be specified"},
		"no namespace":    {"selfsubjectrulesreviews", &review.SelfSubjectRulesReview{}, "no namespace on request"},
	} {
		if _, err := rs[tc.resource].Create(alice, "", tc.obj, registry.WriteOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestProtobuf decodes reviews as kubectl posts them in protobuf: the
// metadata and the spec, never a status, which is the server's to fill.
func TestProtobuf(t *testing.T) {
	str := func(b []byte, n protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), v)
	}
	msg := func(b []byte, n protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), m)
	}
	envelope := func(kind string, obj []byte) []byte {
		return append([]byte("k8s\x00"), msg(msg(nil, 1, str(str(nil, 1, "authorization.k8s.io/v1"), 2, kind)), 2, obj)...)
	}
	rs := resources(t)
	decode := func(resource string, body []byte) (string, error) {
		out, err := rs[resource].(registry.ProtobufDecoder).ProtobufToJSON(body)
		return string(out), err
	}
	// kubectl auth can-i list flunders.wardle.example.com -n ns
	attrs := str(str(str(str(nil, 1, "ns"), 2, "list"), 3, "wardle.example.com"), 5, "flunders")
	allowed := msg(nil, 3, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)) // a status the client has no say in
	ssar := envelope("SelfSubjectAccessReview", msg(msg(msg(nil, 1, nil), 2, msg(nil, 1, attrs)), 3, allowed))
	// A SubjectAccessReview with user, groups and extra (ExtraValue: a
	// message holding the values in field 1).
	extra := msg(str(nil, 1, "scopes"), 2, str(str(nil, 1, "a"), 1, "b"))
	spec := msg(str(str(str(str(nil, 3, "bob"), 4, "g1"), 4, "g2"), 6, "uid-1"), 5, extra)
	spec = msg(spec, 2, str(str(nil, 1, "/healthz"), 2, "get"))
	for _, tc := range []struct {
		resource string
		body     []byte
		want     string
	}{
		{"selfsubjectaccessreviews", ssar,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":{"namespace":"ns","verb":"list","group":"wardle.example.com","resource":"flunders"}},"status":{"allowed":false}}`},
		{"subjectaccessreviews", envelope("SubjectAccessReview", msg(nil, 2, spec)),
			`{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"},"user":"bob","groups":["g1","g2"],"extra":{"scopes":["a","b"]},"uid":"uid-1"},"status":{"allowed":false}}`},
		{"localsubjectaccessreviews", envelope("LocalSubjectAccessReview", msg(msg(nil, 1, str(nil, 3, "ns")), 2, msg(str(nil, 3, "bob"), 1, attrs))),
			`{"kind":"LocalSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"namespace":"ns"},"spec":{"resourceAttributes":{"namespace":"ns","verb":"list","group":"wardle.example.com","resource":"flunders"},"user":"bob"},"status":{"allowed":false}}`},
		{"selfsubjectrulesreviews", envelope("SelfSubjectRulesReview", msg(nil, 2, str(nil, 1, "ns"))),
			`{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"namespace":"ns"},"status":{"resourceRules":null,"nonResourceRules":null,"incomplete":false}}`},
	} {
		got, err := decode(tc.resource, tc.body)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s %v\nwant %s", tc.resource, got, err, tc.want)
		}
	}
	if _, err := decode("subjectaccessreviews", ssar); err == nil || !strings.Contains(err.Error(), "cannot be handled as a SubjectAccessReview") {
		t.Errorf("a SelfSubjectAccessReview read as a SubjectAccessReview: %v", err)
	}
}

// object returns an item's object, failing the test if it cannot be decoded.
func object(t testing.TB, it registry.Item) meta.Object {
	t.Helper()
	obj, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// FuzzProtobufToJSON: a protobuf body is client input (kubectl auth can-i
// sends one). Whatever it holds, the decoder fails cleanly or yields a JSON
// object of the kind asked for.
//
//	go test ./authz/review -run - -fuzz FuzzProtobufToJSON -fuzztime 30s
func FuzzProtobufToJSON(f *testing.F) {
	str := func(b []byte, n protowire.Number, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), v)
	}
	msg := func(b []byte, n protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), m)
	}
	attrs := str(str(str(str(nil, 1, "ns"), 2, "list"), 3, "wardle.example.com"), 5, "flunders")
	envelope := func(kind string, obj []byte) []byte {
		return append([]byte("k8s\x00"), msg(msg(nil, 1, str(str(nil, 1, "authorization.k8s.io/v1"), 2, kind)), 2, obj)...)
	}
	f.Add(envelope("SelfSubjectAccessReview", msg(msg(nil, 1, nil), 2, msg(nil, 1, attrs))), "selfsubjectaccessreviews")
	f.Add(envelope("SubjectAccessReview", msg(nil, 2, msg(str(nil, 3, "bob"), 2, str(nil, 1, "/healthz")))), "subjectaccessreviews")
	f.Add(envelope("SelfSubjectRulesReview", msg(nil, 2, str(nil, 1, "ns"))), "selfsubjectrulesreviews")
	f.Add([]byte("k8s\x00\x0a\xff\xff\xff\xff\x0f"), "subjectaccessreviews")
	rs := resources(f)
	f.Fuzz(func(t *testing.T, body []byte, resource string) {
		r, ok := rs[resource]
		if !ok {
			return
		}
		out, err := r.(registry.ProtobufDecoder).ProtobufToJSON(body)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("ProtobufToJSON(%x) = %s: not a JSON object: %v", body, out, err)
		}
		if m["kind"] != r.Info().Kind {
			t.Fatalf("%s: ProtobufToJSON(%x) = kind %v", resource, body, m["kind"])
		}
	})
}
