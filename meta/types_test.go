package meta

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// checkJSON marshals v and compares the bytes with want, which is written
// out as k8s.io/apimachinery encodes the same value; then it decodes want
// into a fresh value of v's type and checks that it encodes to want again.
func checkJSON(t *testing.T, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	if string(got) != want {
		t.Fatalf("json.Marshal\n got: %s\nwant: %s", got, want)
	}
	back := reflect.New(reflect.TypeOf(v))
	if err := json.Unmarshal([]byte(want), back.Interface()); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", want, err)
	}
	again, err := json.Marshal(back.Elem().Interface())
	if err != nil || string(again) != want {
		t.Fatalf("decode and encode again\n got: %s (%v)\nwant: %s", again, err, want)
	}
}

// flunder is a resource as apikit users declare one.
type flunder struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       struct {
		Reference string `json:"reference,omitempty"`
	} `json:"spec,omitempty"`
}

type flunderList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []flunder `json:"items"`
}

func TestObjectJSON(t *testing.T) {
	at := NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	later := NewTime(at.Add(30 * time.Second))
	grace := int64(30)
	yes, no := true, false
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"zero ObjectMeta omits creationTimestamp, as Kubernetes 1.33+", ObjectMeta{}, `{}`},
		{"zero TypeMeta", TypeMeta{}, `{}`},
		{"TypeMeta", TypeMeta{Kind: "Flunder", APIVersion: "wardle.example.com/v1alpha1"}, `{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1"}`},
		{"zero ListMeta", ListMeta{}, `{}`},
		{"ListMeta", ListMeta{SelfLink: "/x", ResourceVersion: "12", Continue: "abc", RemainingItemCount: &grace},
			`{"selfLink":"/x","resourceVersion":"12","continue":"abc","remainingItemCount":30}`},
		{"full ObjectMeta", ObjectMeta{
			Name: "x", GenerateName: "x-", Namespace: "ns", SelfLink: "/s", UID: "0e9d", ResourceVersion: "7", Generation: 2,
			CreationTimestamp: at, DeletionTimestamp: &later, DeletionGracePeriodSeconds: &grace,
			Labels: map[string]string{"b": "2", "a": "1"}, Annotations: map[string]string{"note": "<&>"},
			OwnerReferences: []OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-2", Controller: &yes, BlockOwnerDeletion: &no}},
			Finalizers:      []string{"example.com/f"},
			ManagedFields: []ManagedFields{{Manager: "kubectl", Operation: "Update", APIVersion: "v1", Time: &at,
				FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:metadata":{"f:labels":{}}}`)}},
		}, `{"name":"x","generateName":"x-","namespace":"ns","selfLink":"/s","uid":"0e9d","resourceVersion":"7","generation":2,` +
			`"creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-02T03:04:35Z","deletionGracePeriodSeconds":30,` +
			`"labels":{"a":"1","b":"2"},"annotations":{"note":"\u003c\u0026\u003e"},` +
			`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u-2","controller":true,"blockOwnerDeletion":false}],` +
			`"finalizers":["example.com/f"],` +
			`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2024-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{}}}}]}`},
		{"owner reference without pointers", OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"},
			`{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}`},
		{"object", flunder{TypeMeta: TypeMeta{Kind: "Flunder", APIVersion: "wardle.example.com/v1alpha1"}, ObjectMeta: ObjectMeta{Name: "x", Namespace: "default"}},
			`{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"x","namespace":"default"},"spec":{}}`},
		{"empty list", flunderList{TypeMeta: TypeMeta{Kind: "FlunderList", APIVersion: "wardle.example.com/v1alpha1"}, Items: []flunder{}},
			`{"kind":"FlunderList","apiVersion":"wardle.example.com/v1alpha1","metadata":{},"items":[]}`},
		{"list", flunderList{ListMeta: ListMeta{ResourceVersion: "9", Continue: "c"}, Items: []flunder{{ObjectMeta: ObjectMeta{Name: "a"}}}},
			`{"metadata":{"resourceVersion":"9","continue":"c"},"items":[{"metadata":{"name":"a"},"spec":{}}]}`},
		{"partial object metadata", PartialObjectMetadata{TypeMeta: TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: ObjectMeta{Name: "a", CreationTimestamp: at}},
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","creationTimestamp":"2024-01-02T03:04:05Z"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkJSON(t, tt.v, tt.want) })
	}
}

func TestObjectMetaDecodesKubernetesJSON(t *testing.T) {
	// As kube-apiserver sends it, with a non-UTC offset a client could send.
	in := `{"name":"x","uid":"u","creationTimestamp":"2024-01-02T05:04:05+02:00","deletionTimestamp":null,"labels":{"a":"1"}}`
	var m ObjectMeta
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if !m.CreationTimestamp.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("creationTimestamp = %v", m.CreationTimestamp)
	}
	if m.DeletionTimestamp != nil && !m.DeletionTimestamp.IsZero() {
		t.Errorf("deletionTimestamp = %v, want unset", m.DeletionTimestamp)
	}
	checkJSON(t, m, `{"name":"x","uid":"u","creationTimestamp":"2024-01-02T03:04:05Z","labels":{"a":"1"}}`)
}

func TestTypeMetaGroupVersionKind(t *testing.T) {
	tests := []struct {
		tm   TypeMeta
		want GroupVersionKind
	}{
		{TypeMeta{Kind: "Pod", APIVersion: "v1"}, GroupVersionKind{Version: "v1", Kind: "Pod"}},
		{TypeMeta{Kind: "Flunder", APIVersion: "wardle.example.com/v1alpha1"}, GroupVersionKind{Group: "wardle.example.com", Version: "v1alpha1", Kind: "Flunder"}},
		{TypeMeta{Kind: "X", APIVersion: "a/b/c"}, GroupVersionKind{Kind: "X"}},
	}
	for _, tt := range tests {
		if got := tt.tm.GroupVersionKind(); got != tt.want {
			t.Errorf("%+v.GroupVersionKind() = %+v, want %+v", tt.tm, got, tt.want)
		}
	}
	var obj Object = &flunder{}
	obj.GetTypeMeta().Kind = "Flunder"
	obj.GetObjectMeta().Name = "x"
	if f := obj.(*flunder); f.Kind != "Flunder" || f.Name != "x" {
		t.Errorf("Object accessors do not reach the embedded structs: %+v", f)
	}
}

func TestTimeJSON(t *testing.T) {
	plus2 := time.FixedZone("+02", 2*60*60)
	tests := []struct {
		name string
		t    Time
		want string
	}{
		{"zero is null", Time{}, `null`},
		{"UTC", NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)), `"2024-01-02T03:04:05Z"`},
		{"other zones are written in UTC", NewTime(time.Date(2024, 1, 2, 5, 4, 5, 0, plus2)), `"2024-01-02T03:04:05Z"`},
		{"fractions are dropped", NewTime(time.Date(2024, 1, 2, 3, 4, 5, 999999999, time.UTC)), `"2024-01-02T03:04:05Z"`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.t)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: json.Marshal = %s, %v; want %s", tt.name, got, err, tt.want)
		}
		var back Time
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: json.Unmarshal(%s): %v", tt.name, got, err)
		}
		if !back.Equal(tt.t.Truncate(time.Second)) {
			t.Errorf("%s: round trip = %v, want %v", tt.name, back, tt.t)
		}
	}

	now := Now()
	b, _ := json.Marshal(now)
	var back Time
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(now.Time) {
		t.Errorf("Now() does not round-trip: %v, %v (was %v)", back, err, now)
	}
	if back.Location() != time.Local {
		t.Errorf("decoded time is in %v, want Local as Kubernetes", back.Location())
	}

	for _, in := range []string{`null`, `""`} {
		v := NewTime(time.Now())
		if err := json.Unmarshal([]byte(in), &v); err != nil || !v.IsZero() {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want zero", in, v, err)
		}
	}
	for _, in := range []string{`"yesterday"`, `5`, `"2024-01-02"`} {
		var v Time
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("json.Unmarshal(%s) accepted %v", in, v)
		}
	}
	var nilTime *Time
	if !nilTime.IsZero() {
		t.Error("a nil *Time must be zero")
	}
}

func TestMicroTimeJSON(t *testing.T) {
	mt := MicroTime{time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.FixedZone("-01", -3600))}
	got, err := json.Marshal(mt)
	if err != nil || string(got) != `"2024-01-02T04:04:05.123456Z"` {
		t.Fatalf("json.Marshal = %s, %v", got, err)
	}
	var back MicroTime
	if err := json.Unmarshal(got, &back); err != nil || !back.Equal(mt.Truncate(time.Microsecond)) {
		t.Errorf("round trip = %v, %v", back, err)
	}
	if got, _ := json.Marshal(MicroTime{}); string(got) != "null" {
		t.Errorf("zero MicroTime = %s, want null", got)
	}
}
