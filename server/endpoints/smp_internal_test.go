package endpoints

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

type smpObject struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	Spec     smpSpec        `json:"spec,omitempty"`
}

type smpSpec struct {
	Ports      []smpPort          `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"port"`
	Finalizers []string           `json:"finalizers,omitempty" patchStrategy:"merge"`
	Args       []string           `json:"args,omitempty"` // replaced
	ByName     map[string]smpPort `json:"byName,omitempty"`
	Selector   map[string]string  `json:"selector,omitempty"`
	Template   *smpSpec           `json:"template,omitempty"`
}

type smpPort struct {
	Port  int      `json:"port"`
	Name  string   `json:"name,omitempty"`
	Hosts []string `json:"hosts,omitempty" patchStrategy:"merge"`
}

func TestStrategicMergePatch(t *testing.T) {
	const orig = `{"metadata":{"labels":{"a":"1"}},"spec":{
		"ports":[{"port":80,"name":"http","hosts":["x"]},{"port":443}],
		"finalizers":["f1","f2"],"args":["-v"],
		"byName":{"web":{"port":80,"hosts":["h"]}},
		"selector":{"app":"a","tier":"t"},
		"template":{"ports":[{"port":1}],"args":["x"]}}}`
	for _, tc := range []struct {
		name, patch, want, err string
	}{
		{name: "scalars and maps merge, null deletes", patch: `{"metadata":{"labels":{"b":"2","a":null}},"spec":{"selector":{"tier":null}}}`,
			want: `{"metadata":{"labels":{"b":"2"}},"spec":{"args":["-v"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f1","f2"],"ports":[{"hosts":["x"],"name":"http","port":80},{"port":443}],"selector":{"app":"a"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "a merge-keyed list merges by key, deeply", patch: `{"spec":{"ports":[{"port":80,"hosts":["y"]},{"port":8080,"name":"alt"}]}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-v"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f1","f2"],"ports":[{"hosts":["x","y"],"name":"http","port":80},{"port":443},{"name":"alt","port":8080}],"selector":{"app":"a","tier":"t"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "a list without a strategy is replaced", patch: `{"spec":{"args":["-q"]}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-q"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f1","f2"],"ports":[{"hosts":["x"],"name":"http","port":80},{"port":443}],"selector":{"app":"a","tier":"t"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "maps of structs merge with the struct's strategies", patch: `{"spec":{"byName":{"web":{"hosts":["i"]},"api":{"port":9}}}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-v"],"byName":{"api":{"port":9},"web":{"hosts":["h","i"],"port":80}},"finalizers":["f1","f2"],"ports":[{"hosts":["x"],"name":"http","port":80},{"port":443}],"selector":{"app":"a","tier":"t"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "directives", patch: `{"spec":{"$deleteFromPrimitiveList/finalizers":["f1"],"ports":[{"port":443,"$patch":"delete"},{"port":7,"$patch":"delete"}],"selector":{"$patch":"replace","only":"this"},"template":{"$patch":"delete"}}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-v"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f2"],"ports":[{"hosts":["x"],"name":"http","port":80}],"selector":{"only":"this"}}}`},
		{name: "retainKeys", patch: `{"spec":{"$retainKeys":["args","selector"],"selector":{"x":"y"}}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-v"],"selector":{"app":"a","tier":"t","x":"y"}}}`},
		{name: "numbers keep their precision", patch: `{"metadata":{"big":9007199254740993}}`,
			want: `{"metadata":{"big":9007199254740993,"labels":{"a":"1"}},"spec":{"args":["-v"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f1","f2"],"ports":[{"hosts":["x"],"name":"http","port":80},{"port":443}],"selector":{"app":"a","tier":"t"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "setElementOrder is accepted", patch: `{"spec":{"$setElementOrder/finalizers":["f2","f1"],"finalizers":["f3"]}}`,
			want: `{"metadata":{"labels":{"a":"1"}},"spec":{"args":["-v"],"byName":{"web":{"hosts":["h"],"port":80}},"finalizers":["f1","f2","f3"],"ports":[{"hosts":["x"],"name":"http","port":80},{"port":443}],"selector":{"app":"a","tier":"t"},"template":{"args":["x"],"ports":[{"port":1}]}}}`},
		{name: "unknown $patch", patch: `{"spec":{"$patch":"sideways"}}`, err: `unknown patch type sideways in "$patch"`},
		{name: "unknown directive", patch: `{"$deleteAll":true}`, err: `unknown patch directive "$deleteAll"`},
		{name: "deleting the object", patch: `{"$patch":"delete"}`, err: `"$patch": "delete" cannot delete the whole object`},
		{name: "a keyed element without its key", patch: `{"spec":{"ports":[{"name":"x"}]}}`, err: `an element of a list merged by "port" has no "port"`},
		{name: "a scalar in a keyed list", patch: `{"spec":{"ports":[1]}}`, err: `elements of a list merged by "port" must be objects`},
		{name: "not an object", patch: `[1]`, err: "the patch must be a JSON object"},
		{name: "deleteFromPrimitiveList not a list", patch: `{"spec":{"$deleteFromPrimitiveList/finalizers":"f1"}}`, err: "$deleteFromPrimitiveList/finalizers must be a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := strategicMergePatch([]byte(orig), []byte(tc.patch), reflect.TypeOf(&smpObject{}))
			if tc.err != "" {
				var bad errBadStrategicPatch
				if !errors.As(err, &bad) || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// FuzzStrategicMergePatch: a patch is client input. Whatever it holds,
// applying it fails with a patch error or yields a JSON object.
func FuzzStrategicMergePatch(f *testing.F) {
	for _, p := range []string{`{"spec":{"ports":[{"port":80,"$patch":"delete"}]}}`, `{"$retainKeys":["spec"]}`,
		`{"spec":{"$deleteFromPrimitiveList/finalizers":["a"],"byName":{"x":{"hosts":["h"]}}}}`, `{"metadata":null}`} {
		f.Add([]byte(p))
	}
	const orig = `{"metadata":{"name":"o"},"spec":{"ports":[{"port":80}],"finalizers":["a"],"byName":{"x":{"port":1}}}}`
	f.Fuzz(func(t *testing.T, patch []byte) {
		got, err := strategicMergePatch([]byte(orig), patch, reflect.TypeOf(smpObject{}))
		if err != nil {
			var bad errBadStrategicPatch
			if !errors.As(err, &bad) {
				t.Fatalf("%s: %v, want a patch error", patch, err)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil || m == nil {
			t.Fatalf("%s: result %s is not a JSON object", patch, got)
		}
	})
}
