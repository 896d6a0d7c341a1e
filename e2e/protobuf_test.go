package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

// protobufClients are the typed clientsets an operator uses, posting in
// one content type.
type protobufClients struct {
	kube kubernetes.Interface
	ext  apiextensionsclient.Interface
	agg  aggregatorclient.Interface
}

func newClients(t *testing.T, cfg *rest.Config, contentType string) protobufClients {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = contentType
	cfg.AcceptContentTypes = "application/json"
	var c protobufClients
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.ext, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.agg, err = aggregatorclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProtobufWritesOfSystemKinds: client-go's typed clientsets (and the
// apiextensions and kube-aggregator ones) post admissionregistration,
// flowcontrol, apiextensions and apiregistration objects in protobuf, as
// cert-manager, kyverno and CRD installers do, and leases and events, as
// leader election and event recorders do. Each kind is created and
// updated in protobuf, and what the server keeps is what it keeps for the
// same object posted as JSON; a malformed body is kube's 400.
func TestProtobufWritesOfSystemKinds(t *testing.T) {
	w := startChain(t)
	cfg := w.RESTConfig()
	pb := newClients(t, cfg, "application/vnd.kubernetes.protobuf")
	js := newClients(t, cfg, "application/json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type kind struct {
		gvr schema.GroupVersionResource
		// namespace is a namespaced kind's; name, when set, names the
		// sample (proto- and json- in it made one when compared).
		namespace, name string
		// field is a key the object written must have (spec when empty).
		field string
		// create creates the kind's sample called name (its group is
		// variant, where the name must carry it) with clients c.
		create func(c protobufClients, name, variant string) error
		// update changes the object in place with clients c.
		update func(c protobufClients, name string) error
	}
	kinds := []kind{
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, sampleValidatingWebhooks(name), metav1.CreateOptions{})
				return err
			},
			update: func(c protobufClients, name string) error {
				o, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				o.Webhooks[0].TimeoutSeconds = ptr.To[int32](7)
				_, err = c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, o, metav1.UpdateOptions{})
				return err
			}},
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, sampleMutatingWebhooks(name), metav1.CreateOptions{})
				return err
			}},
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, sampleValidatingPolicy(name), metav1.CreateOptions{})
				return err
			}},
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-such-policy",
						ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
						MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "none"}}}},
				}, metav1.CreateOptions{})
				return err
			}},
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, sampleMutatingPolicy(name), metav1.CreateOptions{})
				return err
			}},
		{gvr: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "no-such-policy",
						ParamRef: &admissionregistrationv1.ParamRef{Name: "p", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}},
				}, metav1.CreateOptions{})
				return err
			}},
		{gvr: flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
						Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](5), LendablePercent: ptr.To[int32](10),
							LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
								Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 20}}}},
				}, metav1.CreateOptions{})
				return err
			}},
		{gvr: flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"),
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "a"}},
					Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"},
						MatchingPrecedence:  9000,
						DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
						Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
							Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "nobody-" + name}},
								{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ns", Name: "sa"}}},
							ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
								Namespaces: []string{"ns"}}},
							NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
						}}},
				}, metav1.CreateOptions{})
				return err
			}},
		{gvr: apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
			create: func(c protobufClients, name, variant string) error {
				_, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, sampleCRD(variant), metav1.CreateOptions{})
				return err
			},
			update: func(c protobufClients, name string) error {
				o, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				o.Spec.Names.ShortNames = append(o.Spec.Names.ShortNames, "gdg")
				_, err = c.ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, o, metav1.UpdateOptions{})
				return err
			}},
		{gvr: apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"),
			create: func(c protobufClients, name, variant string) error {
				_, err := c.agg.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
					ObjectMeta: metav1.ObjectMeta{Name: "v1." + variant + "svc.example.com"},
					Spec: apiregistrationv1.APIServiceSpec{Group: variant + "svc.example.com", Version: "v1",
						Service:              &apiregistrationv1.ServiceReference{Namespace: "default", Name: "nothing", Port: ptr.To[int32](8443)},
						CABundle:             []byte("-----BEGIN CERTIFICATE-----\n"),
						GroupPriorityMinimum: 1000, VersionPriority: 15},
				}, metav1.CreateOptions{})
				return err
			}},
		{gvr: coordinationv1.SchemeGroupVersion.WithResource("leases"), namespace: "default",
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "operator"}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("op-a_1"), LeaseDurationSeconds: ptr.To[int32](15),
						AcquireTime: &metav1.MicroTime{Time: time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)},
						RenewTime:   &metav1.MicroTime{Time: time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC)}, LeaseTransitions: ptr.To[int32](2)},
				}, metav1.CreateOptions{})
				return err
			},
			// Released as client-go's leader election releases it: an
			// empty holder (set, not absent) and a zero acquire time.
			update: func(c protobufClients, name string) error {
				o, err := c.kube.CoordinationV1().Leases("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				o.Spec.HolderIdentity, o.Spec.AcquireTime, o.Spec.LeaseDurationSeconds = ptr.To(""), &metav1.MicroTime{}, ptr.To[int32](1)
				_, err = c.kube.CoordinationV1().Leases("default").Update(ctx, o, metav1.UpdateOptions{})
				return err
			}},
		{gvr: corev1.SchemeGroupVersion.WithResource("events"), namespace: "default", name: "proto-core-event", field: "involvedObject",
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.CoreV1().Events("default").Create(ctx, &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: name},
					InvolvedObject: corev1.ObjectReference{Kind: "Widget", Namespace: "default", Name: "w", UID: "u-1", APIVersion: "example.com/v1"},
					Reason:         "Reconciled", Message: "reconciled by a", Source: corev1.EventSource{Component: "widget-operator", Host: "node-1"},
					FirstTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
					LastTimestamp:  metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)),
					Count:          3, Type: corev1.EventTypeNormal, ReportingController: "widget-operator", ReportingInstance: "op-a",
				}, metav1.CreateOptions{})
				return err
			},
			update: func(c protobufClients, name string) error {
				o, err := c.kube.CoreV1().Events("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				o.Count, o.LastTimestamp = 4, metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 9, 0, time.UTC))
				_, err = c.kube.CoreV1().Events("default").Update(ctx, o, metav1.UpdateOptions{})
				return err
			}},
		{gvr: eventsv1.SchemeGroupVersion.WithResource("events"), namespace: "default", name: "proto-v1-event", field: "regarding",
			create: func(c protobufClients, name, _ string) error {
				_, err := c.kube.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					EventTime:  metav1.NewMicroTime(time.Date(2026, 12, 1, 10, 0, 0, 250000000, time.UTC)),
					Series: &eventsv1.EventSeries{Count: 2,
						LastObservedTime: metav1.NewMicroTime(time.Date(2026, 12, 1, 10, 0, 9, 0, time.UTC))},
					ReportingController: "widget-operator", ReportingInstance: "op-a", Action: "Reconcile", Reason: "Reconciled",
					Regarding: corev1.ObjectReference{Kind: "Widget", Namespace: "default", Name: "w", UID: "u-1", APIVersion: "example.com/v1"},
					Related:   &corev1.ObjectReference{Kind: "Gadget", Name: "g"},
					Note:      "reconciled by a", Type: corev1.EventTypeWarning,
				}, metav1.CreateOptions{})
				return err
			}},
	}

	dyn := w.Dynamic()
	for _, k := range kinds {
		t.Run(k.gvr.GroupResource().String(), func(t *testing.T) {
			name := map[string]string{"customresourcedefinitions": "gadgets.proto.example.com", "apiservices": "v1.protosvc.example.com"}[k.gvr.Resource]
			if k.name != "" {
				name = k.name
			}
			jsonName := strings.Replace(name, "proto", "json", 1)
			if name == "" {
				name, jsonName = "proto-"+k.gvr.Resource, "json-"+k.gvr.Resource
			}
			if err := k.create(pb, name, "proto"); err != nil {
				t.Fatalf("create in protobuf: %v", err)
			}
			if err := k.create(js, jsonName, "json"); err != nil {
				t.Fatalf("create in JSON: %v", err)
			}
			if k.update != nil {
				if err := k.update(pb, name); err != nil {
					t.Fatalf("update in protobuf: %v", err)
				}
				if err := k.update(js, jsonName); err != nil {
					t.Fatalf("update in JSON: %v", err)
				}
			}
			var res dynamic.ResourceInterface = dyn.Resource(k.gvr)
			if k.namespace != "" {
				res = dyn.Resource(k.gvr).Namespace(k.namespace)
			}
			got, err := res.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := res.Get(ctx, jsonName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// What the client wrote, with the names that differ made one.
			written := func(o map[string]any) string {
				labels := o["metadata"].(map[string]any)["labels"]
				delete(o, "metadata")
				delete(o, "status")
				b, _ := json.Marshal(map[string]any{"labels": labels, "object": o})
				s := strings.ReplaceAll(string(b), "json", "VARIANT")
				return strings.ReplaceAll(s, "proto", "VARIANT")
			}
			g, w := written(got.Object), written(want.Object)
			if g != w {
				t.Errorf("posted in protobuf, kept\n%s\nposted in JSON, kept\n%s", g, w)
			}
			field := k.field
			if field == "" {
				field = "spec"
			}
			if !strings.Contains(g, `"`+field+`"`) && !strings.Contains(g, `"webhooks"`) {
				t.Errorf("%s kept no %s: %s", name, field, g)
			}
		})
	}

	// A CRD posted in protobuf serves its custom resources.
	poll(t, "gadgets.proto.example.com established", func() (bool, string) {
		crd, err := pb.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.proto.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "not established"
	})
	// A malformed protobuf body: kube-apiserver's 400. The envelope
	// (TypeMeta in field 1, the object in 2) holds a FlowSchema whose
	// metadata (field 1) claims 9 bytes it does not have.
	typeMeta := "\x0a\x1fflowcontrol.apiserver.k8s.io/v1\x12\x0aFlowSchema"
	truncated := "k8s\x00\x0a" + string(rune(len(typeMeta))) + typeMeta + "\x12\x02\x0a\x09"
	for _, tc := range []struct{ name, body, want string }{
		{"truncated object", truncated, `FlowSchema in version "v1" cannot be handled as a FlowSchema: unexpected EOF`},
		{"no magic", "{}", `the object provided is unrecognized (must be of type FlowSchema): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, status := rawPost(t, cfg, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "application/vnd.kubernetes.protobuf", tc.body)
			if code != http.StatusBadRequest || status.Reason != metav1.StatusReasonBadRequest || !strings.HasPrefix(status.Message, tc.want) {
				t.Errorf("POST %q = %d %s %q, want 400 BadRequest %q", tc.body, code, status.Reason, status.Message, tc.want)
			}
		})
	}
}

// rawPost posts body as the admin user and returns the status code and
// the Status the server answered.
func rawPost(t *testing.T, cfg *rest.Config, path, contentType, body string) (int, metav1.Status) {
	t.Helper()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, cfg.Host+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := (&http.Client{Transport: transport, Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var s metav1.Status
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode, s
}

func sampleRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"nothing.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"things"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}
}

func sampleValidatingWebhooks(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "cert-manager"}, Annotations: map[string]string{"cert-manager.io/inject-ca-from": "ns/cert"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "check.nothing.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate"), CABundle: []byte("not a real CA")},
			Rules:                   sampleRules(),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}},
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](3),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "not-system", Expression: "!request.userInfo.username.startsWith('system:')"}},
		}},
	}
}

func sampleMutatingWebhooks(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.nothing.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "kyverno", Name: "svc", Path: ptr.To("/mutate"), Port: ptr.To[int32](8443)}},
			Rules:                   sampleRules(),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		}},
	}
}

func sampleValidatingPolicy(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: []string{"x"}, RuleWithOperations: sampleRules()[0]}},
				MatchPolicy:   ptr.To(admissionregistrationv1.Exact),
			},
			Variables:        []admissionregistrationv1.Variable{{Name: "n", Expression: "object.metadata.name"}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "variables.n != 'bad'", Message: "bad name", Reason: ptr.To(metav1.StatusReasonForbidden)}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "name", ValueExpression: "variables.n"}},
		},
	}
}

func sampleMutatingPolicy(name string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: sampleRules()[0]}}},
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"seen": "yes"}}}`}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// sampleCRD is a CRD of group <variant>.example.com whose schema uses
// what JSONSchemaProps carries: nested properties, defaults, enums,
// bounds, items, additionalProperties, CEL rules, list and map types.
func sampleCRD(variant string) *apiextensionsv1.CustomResourceDefinition {
	group := variant + ".example.com"
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	schema := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "a gadget",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {
				Type:     "object",
				Required: []string{"size"},
				XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size != 'xxl'", Message: "too big",
					Reason: ptr.To(apiextensionsv1.FieldValueForbidden), FieldPath: ".size"}},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size":     {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"s"`)}, {Raw: []byte(`"m"`)}, {Raw: []byte(`"xxl"`)}}, Default: &apiextensionsv1.JSON{Raw: []byte(`"m"`)}},
					"replicas": {Type: "integer", Format: "int32", Minimum: ptr.To(0.0), Maximum: ptr.To(10.5), ExclusiveMaximum: true},
					"name":     {Type: "string", MaxLength: ptr.To[int64](63), Pattern: "^[a-z]+$", Nullable: true},
					"ports": {Type: "array", MaxItems: ptr.To[int64](4), XListType: ptr.To("map"), XListMapKeys: []string{"port"},
						Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"port"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {Type: "integer"}, "protocol": str}}}},
					"labels":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}, XMapType: ptr.To("granular")},
					"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: ptr.To(true)},
					"port":     {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
				},
			},
			"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ShortNames: []string{"gd"}, Categories: []string{"all"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "string", JSONPath: ".spec.size", Priority: 1}},
				SelectableFields:         []apiextensionsv1.SelectableField{{JSONPath: ".spec.size"}},
			}},
		},
	}
}
