package meta

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseFieldSelector(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // String() of the result
		wantErr  string
	}{
		{name: "empty", in: "", want: ""},
		{name: "equals", in: "a=b", want: "a=b"},
		{name: "double equals is equals", in: "a==b", want: "a=b"},
		{name: "not equals", in: "a!=b", want: "a!=b"},
		{name: "sorted", in: "status.phase!=Running,metadata.name=web", want: "metadata.name=web,status.phase!=Running"},
		{name: "duplicates kept", in: "a=b,a=b", want: "a=b,a=b"},
		{name: "sorted by canonical form", in: "a==z,a=b", want: "a=b,a=z"},
		{name: "empty value", in: "a=", want: "a="},
		{name: "empty value not equals", in: "a!=", want: "a!="},
		{name: "empty field", in: "=b", want: "=b"},
		{name: "empty field and value dropped", in: "=", want: ""},
		{name: "empty field and value dropped with ==", in: "==,a=b", want: "a=b"},
		{name: "empty field and value dropped with !=", in: "!=", want: ""},
		{name: "empty terms skipped", in: ",,a=b,,", want: "a=b"},
		{name: "blanks are not trimmed", in: " a = b ", want: " a = b "},
		{name: "escaped comma", in: `a=x\,y`, want: `a=x\,y`},
		{name: "escaped equals", in: `a=x\=y`, want: `a=x\=y`},
		{name: "escaped backslash", in: `a=x\\y`, want: `a=x\\y`},
		{name: "escaped comma ends value", in: `b=1,a=x\,`, want: `a=x\,,b=1`},
		{name: "field is literal", in: `a\,b=c`, want: `a\,b=c`},
		{name: "field with bang", in: "a!b=c", want: "a!b=c"},
		{name: "value starting with bang", in: "a=!b", want: "a=!b"},
		{name: "non-ASCII", in: "名前=値", want: "名前=値"},

		{name: "no operator", in: "a", wantErr: "invalid selector: 'a'; can't understand 'a'"},
		{name: "errors in sorted order", in: "b=x=y,a", wantErr: "invalid selector: 'b=x=y,a'; can't understand 'a'"},
		{name: "comma splits a field", in: "a,b=c", wantErr: "invalid selector: 'a,b=c'; can't understand 'a'"},
		{name: "unescaped equals", in: "a=b=c", wantErr: "invalid field selector: unescaped character in value: 61"},
		{name: "not equals then equals", in: "a!==b", wantErr: "invalid field selector: unescaped character in value: 61"},
		{name: "unknown escape", in: `a=\x`, wantErr: `invalid field selector: invalid escape sequence: \x`},
		{name: "unknown escape of a rune", in: `a=\é`, wantErr: `invalid field selector: invalid escape sequence: \é`},
		{name: "trailing backslash", in: `a=b\`, wantErr: `invalid field selector: invalid escape sequence: \`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := ParseFieldSelector(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseFieldSelector(%q) = %q, want error %q", tt.in, sel, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Fatalf("ParseFieldSelector(%q) error\n got: %s\nwant: %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFieldSelector(%q): %v", tt.in, err)
			}
			if got := sel.String(); got != tt.want {
				t.Fatalf("ParseFieldSelector(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if sel.Empty() != (tt.want == "") {
				t.Errorf("Empty() = %v", sel.Empty())
			}
			again, err := ParseFieldSelector(sel.String())
			if err != nil || !reflect.DeepEqual(again, sel) {
				t.Errorf("String %q does not parse back to an equal selector: %#v, %v", sel, again, err)
			}
		})
	}
}

func TestFieldSelectorMatches(t *testing.T) {
	tests := []struct {
		sel  string
		set  Set
		want bool
	}{
		{"", nil, true},
		{"a=b", Set{"a": "b"}, true},
		{"a=b", Set{"a": "c"}, false},
		{"a=b", nil, false},
		{"a==b", Set{"a": "b"}, true},
		{"a!=b", Set{"a": "c"}, true},
		{"a!=b", nil, true},
		{"a!=b", Set{"a": "b"}, false},
		// A missing field reads as the empty string, unlike a label.
		{"a=", nil, true},
		{"a=", Set{"a": "x"}, false},
		{"a!=", nil, false},
		{"a!=", Set{"a": "x"}, true},
		{`a=x\,y`, Set{"a": "x,y"}, true},
		{"metadata.name=web,metadata.namespace!=kube-system", Set{"metadata.name": "web", "metadata.namespace": "default"}, true},
		{"metadata.name=web,metadata.namespace!=kube-system", Set{"metadata.name": "web", "metadata.namespace": "kube-system"}, false},
	}
	for _, tt := range tests {
		sel, err := ParseFieldSelector(tt.sel)
		if err != nil {
			t.Fatalf("ParseFieldSelector(%q): %v", tt.sel, err)
		}
		if got := sel.Matches(tt.set); got != tt.want {
			t.Errorf("%q.Matches(%v) = %v, want %v", tt.sel, tt.set, got, tt.want)
		}
	}
}

func TestFieldSelectorRequiresExactMatch(t *testing.T) {
	tests := []struct {
		sel, field string
		wantValue  string
		wantFound  bool
	}{
		{"", "metadata.name", "", false},
		{"metadata.name=x", "metadata.name", "x", true},
		{"metadata.name==x", "metadata.name", "x", true},
		{"metadata.name!=x", "metadata.name", "", false},
		{"metadata.name!=y,metadata.name=x", "metadata.name", "x", true},
		{"metadata.name=y,metadata.name=x", "metadata.name", "x", true}, // the first in sorted order
		{`metadata.name=a\,b`, "metadata.name", "a,b", true},
		{"metadata.namespace=x", "metadata.name", "", false},
	}
	for _, tt := range tests {
		sel, err := ParseFieldSelector(tt.sel)
		if err != nil {
			t.Fatalf("ParseFieldSelector(%q): %v", tt.sel, err)
		}
		v, found := sel.RequiresExactMatch(tt.field)
		if v != tt.wantValue || found != tt.wantFound {
			t.Errorf("%q.RequiresExactMatch(%q) = %q, %v; want %q, %v", tt.sel, tt.field, v, found, tt.wantValue, tt.wantFound)
		}
	}
}

func TestEscapeFieldValue(t *testing.T) {
	tests := []struct{ raw, escaped string }{
		{"", ""},
		{"plain", "plain"},
		{`a\b`, `a\\b`},
		{"a,b", `a\,b`},
		{"a=b", `a\=b`},
		{`\,=`, `\\\,\=`},
		{`\\`, `\\\\`},
		{"x\xffy,", "x\xffy\\,"}, // bytes are kept, even invalid UTF-8
	}
	for _, tt := range tests {
		if got := EscapeFieldValue(tt.raw); got != tt.escaped {
			t.Errorf("EscapeFieldValue(%q) = %q, want %q", tt.raw, got, tt.escaped)
		}
		got, err := UnescapeFieldValue(tt.escaped)
		if err != nil || got != tt.raw {
			t.Errorf("UnescapeFieldValue(%q) = %q, %v; want %q", tt.escaped, got, err, tt.raw)
		}
	}
	for in, wantErr := range map[string]string{
		`a\b`:  `invalid field selector: invalid escape sequence: \b`,
		`\`:    `invalid field selector: invalid escape sequence: \`,
		`a\\\`: `invalid field selector: invalid escape sequence: \`,
		"a,b":  "invalid field selector: unescaped character in value: 44",
		"a=b":  "invalid field selector: unescaped character in value: 61",
		`\\=`:  "invalid field selector: unescaped character in value: 61",
	} {
		if got, err := UnescapeFieldValue(in); err == nil || err.Error() != wantErr {
			t.Errorf("UnescapeFieldValue(%q) = %q, %v; want error %q", in, got, err, wantErr)
		}
	}
}

func TestFieldSelectorFromSet(t *testing.T) {
	tests := []struct {
		set  Set
		want string
	}{
		{nil, ""},
		{Set{"": ""}, ""},
		{Set{"b": "x,y", "a": "1", "c": ""}, `a=1,b=x\,y,c=`},
	}
	for _, tt := range tests {
		sel := FieldSelectorFromSet(tt.set)
		if got := sel.String(); got != tt.want {
			t.Errorf("FieldSelectorFromSet(%v).String() = %q, want %q", tt.set, got, tt.want)
		}
		if !sel.Matches(tt.set) {
			t.Errorf("FieldSelectorFromSet(%v) does not match its own set", tt.set)
		}
		again, err := ParseFieldSelector(sel.String())
		if err != nil || !reflect.DeepEqual(again, sel) {
			t.Errorf("FieldSelectorFromSet(%v) does not round-trip: %#v, %v", tt.set, again, err)
		}
	}
}

var fieldSeeds = []string{
	"", "a=b", "a==b", "a!=b", "=", "=b", "a=", "metadata.name=web,status.phase!=Running", `a=x\,y\=z\\`, `a\,b=c`,
	"a", "a=b=c", `a=\x`, `a=b\`, "a==z,a=b", " a = b ", ",,", "名前=値", "a=\xff\\,",
}

func FuzzParseFieldSelector(f *testing.F) {
	for _, s := range fieldSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := UnescapeFieldValue(EscapeFieldValue(s)); err != nil || got != s {
			t.Fatalf("UnescapeFieldValue(EscapeFieldValue(%q)) = %q, %v", s, got, err)
		}
		sel, err := ParseFieldSelector(s)
		if err != nil {
			if sel != nil {
				t.Fatalf("ParseFieldSelector(%q) returned a selector with error %v", s, err)
			}
			return
		}
		str := sel.String()
		again, err := ParseFieldSelector(str)
		if err != nil {
			t.Fatalf("ParseFieldSelector(%q).String() = %q, which does not parse: %v", s, str, err)
		}
		if !reflect.DeepEqual(sel, again) {
			t.Fatalf("round trip of %q through %q changed the selector:\n%#v\n%#v", s, str, sel, again)
		}
		if again.String() != str {
			t.Fatalf("String not canonical: %q then %q", str, again.String())
		}
		set := Set{}
		for _, w := range strings.Split(s, ",") {
			set[w] = w
			sel.Matches(set)
			sel.RequiresExactMatch(w)
		}
	})
}

func BenchmarkParseFieldSelector(b *testing.B) {
	const s = `metadata.name=web-0,metadata.namespace!=kube-system,spec.nodeName=node\,1`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFieldSelector(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFieldSelectorMatches(b *testing.B) {
	sel, err := ParseFieldSelector("metadata.name=web-0,metadata.namespace!=kube-system")
	if err != nil {
		b.Fatal(err)
	}
	set := Set{"metadata.name": "web-0", "metadata.namespace": "default", "spec.nodeName": "node-1"}
	b.ReportAllocs()
	for b.Loop() {
		if !sel.Matches(set) {
			b.Fatal("no match")
		}
	}
}

func TestSelectorFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"metadata.name=a", []string{"metadata.name"}},
		{"spec.x!=1,metadata.name==b", []string{"metadata.name", "spec.x"}},
		{`a=x\,y,a=z`, []string{"a", "a"}},
	} {
		sel, err := ParseFieldSelector(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := SelectorFields(sel); !slices.Equal(got, tc.want) {
			t.Errorf("SelectorFields(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := SelectorFields(Nothing()); got != nil {
		t.Errorf("SelectorFields(Nothing()) = %q", got)
	}
}
