package endpoints

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
)

func TestDuplicateFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a"}},
		{`{"metadata":{"name":"x","labels":{"k":"1","k":"2"},"name":"y"}}`, []string{"metadata.labels.k", "metadata.name"}},
		{`{"spec":{"items":[{"p":1},{"p":1,"p":2}]}}`, []string{"spec.items[1].p"}},
		{`{"a":1,"\u0061":2}`, []string{"a"}},
		{`{"A":1,"a":2}`, nil},
		{`{"s":"a\"b","s":"}"}`, []string{"s"}},
		{` { "a" : [ 1 , { "b" : null , "b" : true } ] , "a" : 0 } `, []string{"a[1].b", "a"}},
		{`[{"x":1,"x":2}]`, []string{"[0].x"}},
		{`"str"`, nil},
		{`{}`, nil},
	} {
		if got := duplicateFields([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("duplicateFields(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// referenceDuplicates finds the duplicates with encoding/json's tokenizer.
func referenceDuplicates(data []byte) []string {
	d := json.NewDecoder(bytes.NewReader(data))
	var out []string
	var walk func(path string)
	walk = func(path string) {
		tok, err := d.Token()
		if err != nil {
			return
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return
				}
				k := kt.(string)
				p := k
				if path != "" {
					p = path + "." + k
				}
				if seen[k] {
					out = append(out, p)
				}
				seen[k] = true
				walk(p)
			}
			d.Token()
		case json.Delim('['):
			for i := 0; d.More(); i++ {
				walk(path + "[" + strconv.Itoa(i) + "]")
			}
			d.Token()
		}
	}
	walk("")
	return out
}

func FuzzDuplicateFields(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"metadata":{"name":"x","name":"y"}}`, `[{"x":[1,{"y":1,"y":2}]}]`, `{"a":"\\\"","a":1}`, `{"\u00e9":1,"é":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		got, want := duplicateFields(data), referenceDuplicates(data)
		if !slices.Equal(got, want) {
			t.Fatalf("duplicateFields(%s) = %q, want %q", data, got, want)
		}
	})
}

func BenchmarkDuplicateFields(b *testing.B) {
	data := []byte(`{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"f1","namespace":"default","labels":{"app":"bench","tier":"x"},"annotations":{"a":"b"}},"spec":{"reference":"some-reference-value","referenceType":"Flunder"}}`)
	b.ReportAllocs()
	for b.Loop() {
		duplicateFields(data)
	}
}
