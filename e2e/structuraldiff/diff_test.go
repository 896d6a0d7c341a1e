package structuraldiff

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// cases are schemas with custom resources: every validation, format and
// extension apikit implements, valid and invalid values.
var cases = []struct {
	name   string
	schema string
	values []string
}{
	{"numbers", obj(`"i":{"type":"integer","minimum":1,"maximum":10,"multipleOf":3},"n":{"type":"number","minimum":0.5,"exclusiveMinimum":true,"maximum":9.5,"exclusiveMaximum":true},"m":{"type":"number","multipleOf":0.1}`),
		[]string{`{"i":11}`, `{"i":0}`, `{"i":4}`, `{"i":9}`, `{"i":2.0}`, `{"i":2.5}`, `{"n":0.5}`, `{"n":9.5}`, `{"n":5}`, `{"m":0.3}`, `{"m":0.35}`, `{"i":"x"}`, `{"n":true}`, `{"i":null}`}},
	{"numeric formats", obj(`"a":{"type":"integer","format":"int32"},"b":{"type":"integer","format":"int64"},"c":{"type":"number","format":"float"},"d":{"type":"number","format":"double"},"e":{"type":"string","format":"int32"}`),
		[]string{`{"a":2147483648}`, `{"a":-2147483649}`, `{"a":5}`, `{"b":1e19}`, `{"c":1e39}`, `{"c":1.5}`, `{"d":1e300}`, `{"e":"x"}`, `{"e":5}`, `{"a":"5"}`}},
	{"strings", obj(`"s":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"},"e":{"type":"string","enum":["a","b"]},"p":{"type":"string","pattern":"^x"}`),
		[]string{`{"s":"a"}`, `{"s":"abcde"}`, `{"s":"AB"}`, `{"s":"äöü"}`, `{"e":"c"}`, `{"e":"a"}`, `{"p":"yx"}`, `{"s":1}`}},
	{"string formats", obj(`"uuid":{"type":"string","format":"uuid"},"dt":{"type":"string","format":"date-time"},"date":{"type":"string","format":"date"},"dur":{"type":"string","format":"duration"},"byte":{"type":"string","format":"byte"},"host":{"type":"string","format":"hostname"},"ip4":{"type":"string","format":"ipv4"},"ip6":{"type":"string","format":"ipv6"},"cidr":{"type":"string","format":"cidr"},"mail":{"type":"string","format":"email"},"uri":{"type":"string","format":"uri"},"mac":{"type":"string","format":"mac"},"short":{"type":"string","format":"k8s-short-name"},"long":{"type":"string","format":"k8s-long-name"},"cc":{"type":"string","format":"creditcard"},"isbn":{"type":"string","format":"isbn"},"ssn":{"type":"string","format":"ssn"},"hex":{"type":"string","format":"hexcolor"},"rgb":{"type":"string","format":"rgbcolor"},"bson":{"type":"string","format":"bsonobjectid"},"pw":{"type":"string","format":"password"},"other":{"type":"string","format":"nonsense"}`),
		[]string{
			`{"uuid":"x","dt":"2024-01-02","date":"2024-13-01","dur":"forever","byte":"!","host":"-a","ip4":"1.2.3","ip6":"1.2.3.4","cidr":"1.2.3.4","mail":"nope","uri":"no scheme","mac":"zz","short":"A","long":"a..b","cc":"1234","isbn":"123","ssn":"123456789","hex":"#ggg","rgb":"rgb(1,2)","bson":"xyz","pw":"","other":"%"}`,
			`{"uuid":"123e4567-e89b-12d3-a456-426614174000","dt":"2024-01-02T10:00:00Z","date":"2024-02-29","dur":"1h30m","byte":"aGVsbG8=","host":"my-host.example.com","ip4":"010.0.0.1","ip6":"::1","cidr":"10.0.0.0/8","mail":"a@example.com","uri":"https://x/y","mac":"00:1a:2b:3c:4d:5e","short":"my-name","long":"a.b-c","cc":"4111 1111 1111 1111","isbn":"978-0321751041","ssn":"123-45-6789","hex":"#fff","rgb":"rgb(255, 0, 10)","bson":"507f1f77bcf86cd799439011"}`,
			`{"byte":"","dur":"3 days","host":"my-host","uuid":"","date":"","dt":"2024-01-02t10:00:00.5+01:00","cidr":"010.0.0.0/8","isbn":"0321751043"}`,
			`{"dur":"x 5 hours y","host":"a.b1","mail":"Name <a@b.c>","uri":"/relative","short":"` + strings.Repeat("a", 64) + `"}`,
		}},
	{"lists", obj(`"l":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","maxLength":1}},"set":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},"objset":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"a":{"type":"integer"}}}},"map":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name","proto"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"proto":{"type":"string","default":"TCP"},"port":{"type":"integer"}}}}`),
		[]string{`{"l":[]}`, `{"l":["a","b","c"]}`, `{"l":["ab"]}`, `{"set":["a","b","a","a","b"]}`, `{"objset":[{"a":1},{"a":1},{"a":2}]}`, `{"map":[{"name":"a"},{"name":"a","proto":"TCP"},{"name":"a","proto":"UDP"},{"name":"b"},{"name":"b"}]}`, `{"map":[1]}`, `{"map":[{"port":1}]}`, `{"l":"x"}`}},
	{"objects", obj(`"o":{"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"integer","minimum":0}},"r":{"type":"object","required":["a","b"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}},"free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"nullable":{"type":"object","nullable":true,"properties":{"x":{"type":"string"}}}`),
		[]string{`{"o":{}}`, `{"o":{"a":1,"b":2,"c":3}}`, `{"o":{"a":-1}}`, `{"r":{}}`, `{"r":{"a":"x"}}`, `{"free":{"anything":[1,{"x":null}]}}`, `{"nullable":null}`, `{"o":null}`, `{"r":[]}`}},
	{"int-or-string", obj(`"ios":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^\\d+%?$"},"plain":{"x-kubernetes-int-or-string":true}`),
		[]string{`{"ios":5}`, `{"ios":"50%"}`, `{"ios":"x"}`, `{"ios":1.5}`, `{"ios":true}`, `{"plain":{}}`, `{"plain":null}`}},
	{"junctors", obj(`"any":{"type":"integer","anyOf":[{"minimum":10},{"maximum":2}]},"one":{"type":"integer","oneOf":[{"minimum":1},{"maximum":5}]},"all":{"type":"string","allOf":[{"minLength":2},{"pattern":"^a"}]},"not":{"type":"string","not":{"enum":["no"]}},"objany":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`),
		[]string{`{"any":5}`, `{"any":11}`, `{"one":3}`, `{"one":7}`, `{"all":"b"}`, `{"all":"ab"}`, `{"not":"no"}`, `{"objany":{}}`, `{"objany":{"b":"x"}}`}},
	{"embedded", obj(`"emb":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"typed":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}`),
		[]string{`{"emb":{}}`, `{"emb":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a/b","namespace":"Bad_NS","labels":{"-x":"y","ok":"-bad"},"annotations":{"A/b/c":"x"},"finalizers":["a","a"],"generateName":"x%"}}}`,
			`{"emb":{"apiVersion":"a/b/c","kind":"my_kind"}}`, `{"emb":{"apiVersion":1,"kind":"","metadata":"m"}}`, `{"typed":{"apiVersion":"v1","kind":"K","spec":{"a":"x","b":1},"other":2}}`,
			`{"emb":{"apiVersion":"v1","kind":"K","metadata":{"name":"n","bogus":1,"labels":{"a":"b"}}}}`, `{"emb":{"apiVersion":"v1","kind":"K","metadata":{"name":5}}}`}},
	{"defaults", obj(`"d":{"type":"object","default":{},"properties":{"r":{"type":"integer","default":1},"n":{"type":"string","nullable":true,"default":"x"},"s":{"type":"string","default":"y"},"l":{"type":"array","items":{"type":"object","properties":{"p":{"type":"string","default":"TCP"}}}},"m":{"type":"object","additionalProperties":{"type":"object","properties":{"q":{"type":"integer","default":80}}}},"f":{"type":"number","default":0.5},"dl":{"type":"array","items":{"type":"string","default":"z"}}}}`),
		[]string{`{}`, `{"d":{"n":null,"s":null,"l":[{},{"p":"UDP"}],"m":{"a":{},"b":{"q":1}},"dl":[null,"a"]}}`, `{"d":null}`, `{"d":{"r":5,"unknown":1}}`}},
	{"additionalProperties booleans", obj(`"t":{"type":"object","additionalProperties":true},"f":{"type":"object","additionalProperties":false},"tp":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"additionalProperties":true},"tw":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true},"fp":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"additionalProperties":false}`),
		[]string{`{"t":{"x":{"y":1},"z":1,"l":[{"a":1}],"n":null}}`, `{"f":{"x":1,"y":{"z":2}}}`, `{"f":{}}`, `{"tp":{"x":{"y":1}}}`, `{"tw":{"a":"s","b":{"c":1}}}`, `{"fp":{"k":{"v":1}}}`}},
	{"unknown fields", `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"},"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}}}}},"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"object","properties":{"k":{"type":"string"}}}}}}}`,
		[]string{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":"x","b":1,"l":[{"n":"a","x":1},{"y":2}]},"status":{"free":1,"known":{"k":"v","drop":2}},"top":true}`,
			`{"apiVersion":1,"kind":"Widget","spec":{"a":null,"b":null}}`}},
}

func obj(props string) string { return `{"type":"object","properties":{` + props + `}}` }

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := structural.DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", s, err)
	}
	return v
}

func sorted(l []string) []string {
	out := append([]string(nil), l...)
	sort.Strings(out)
	return out
}

func TestValidateMatchesKube(t *testing.T) {
	for _, c := range cases {
		internal, ss := kubeSchema(t, c.schema)
		if ss == nil {
			t.Fatalf("%s: schema not structural for kube", c.name)
		}
		s, err := schema.FromOpenAPIV3([]byte(c.schema))
		if err != nil {
			t.Fatalf("%s: FromOpenAPIV3: %v", c.name, err)
		}
		for _, v := range c.values {
			want := sorted(kubeValidate(t, internal, ss, decode(t, v)))
			var got []string
			for _, e := range structural.Validate(s, decode(t, v)) {
				got = append(got, e.Error())
			}
			got = sorted(got)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s:\n apikit: %s\n   kube: %s", c.name, v, strings.Join(got, "\n         "), strings.Join(want, "\n         "))
			}
		}
	}
}

func TestPruneAndDefaultMatchKube(t *testing.T) {
	for _, c := range cases {
		_, ss := kubeSchema(t, c.schema)
		s, err := schema.FromOpenAPIV3([]byte(c.schema))
		if err != nil {
			t.Fatalf("%s: FromOpenAPIV3: %v", c.name, err)
		}
		for _, v := range c.values {
			for _, root := range []bool{true, false} {
				kubeObj, ours := decode(t, v), decode(t, v)
				wantPruned := kubePrune(t, ss, kubeObj, root)
				gotPruned := structural.Prune(s, ours, root)
				if !reflect.DeepEqual(sorted(gotPruned), sorted(wantPruned)) {
					t.Errorf("%s %s root=%v: pruned\n apikit: %q\n   kube: %q", c.name, v, root, gotPruned, wantPruned)
				}
				kubeDefault(ss, kubeObj)
				structural.Default(s, ours)
				if !reflect.DeepEqual(ours, kubeObj) {
					a, _ := json.Marshal(ours)
					b, _ := json.Marshal(kubeObj)
					t.Errorf("%s %s root=%v: pruned and defaulted\n apikit: %s\n   kube: %s", c.name, v, root, a, b)
				}
			}
		}
	}
}
