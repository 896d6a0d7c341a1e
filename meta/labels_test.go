package meta

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Kubernetes' validation messages, written out as kubectl prints them (note
// the doubled spaces after the examples); the tests hold the code to these
// literals rather than to its own constants.
const (
	k8sNamePartMsg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	k8sLabelValueMsg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
	k8sPrefixMsg = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	k8sQualifiedNameMsg = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') " +
		"with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)

func TestParseLabelSelector(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name, in string
		want     string // String() of the result
		wantErr  string
	}{
		{name: "empty", in: "", want: ""},
		{name: "blank", in: " \t\r\n", want: ""},
		{name: "equals", in: "x=a", want: "x=a"},
		{name: "double equals kept", in: "x==a", want: "x==a"},
		{name: "not equals", in: "x!=a", want: "x!=a"},
		{name: "blanks around tokens", in: "  x  =  a  ,\ty\n!=\rb ", want: "x=a,y!=b"},
		{name: "empty value", in: "x=", want: "x="},
		{name: "empty value before comma", in: "x=,y", want: "x=,y"},
		{name: "exists", in: "x", want: "x"},
		{name: "does not exist", in: "!x", want: "!x"},
		{name: "does not exist with blank", in: "! x", want: "!x"},
		{name: "in sorted and deduplicated", in: "x in (b,a,a)", want: "x in (a,b)"},
		{name: "notin", in: "x notin (a)", want: "x notin (a)"},
		{name: "in without blank before paren", in: "x in(a)", want: "x in (a)"},
		{name: "in empty set is the empty value", in: "x in ()", want: "x in ()"},
		{name: "in leading comma", in: "x in (,a)", want: "x in (,a)"},
		{name: "in trailing comma", in: "x in (a,)", want: "x in (,a)"},
		{name: "in double comma", in: "x in (a,,b)", want: "x in (,a,b)"},
		{name: "in only commas", in: "x in (,,,)", want: "x in ()"},
		{name: "gt", in: "x>1", want: "x>1"},
		{name: "lt keeps leading zeros", in: "x<007", want: "x<007"},
		{name: "sorted by key", in: "z=1,a=2,m", want: "a=2,m,z=1"},
		{name: "same key keeps input order", in: "a!=c,a=b", want: "a!=c,a=b"},
		{name: "keywords as keys and values", in: "in in (in,notin),notin=in", want: "in in (in,notin),notin=in"},
		{name: "prefixed key", in: "example.com/app=web", want: "example.com/app=web"},
		{name: "value characters", in: "k=A-b_c.9", want: "k=A-b_c.9"},
		{name: "63 character value", in: "k=" + long[:63], want: "k=" + long[:63]},

		{name: "leading comma", in: ",x", wantErr: "found ',', expected: !, identifier, or 'end of string'"},
		{name: "leading operator", in: "=x", wantErr: "found '=', expected: !, identifier, or 'end of string'"},
		{name: "trailing comma", in: "x,", wantErr: "found '', expected: identifier after ','"},
		{name: "double comma", in: "x,,y", wantErr: "found ',', expected: identifier after ','"},
		{name: "second operator", in: "x=a=b", wantErr: "found '=', expected: ',' or 'end of string'"},
		{name: "two identifiers", in: "x=a b", wantErr: "found 'b', expected: ',' or 'end of string'"},
		{name: "negated with operator", in: "!x=a", wantErr: "found '=', expected: ',' or 'end of string'"},
		{name: "negated with in", in: "!x in (a)", wantErr: "found 'in', expected: ',' or 'end of string'"},
		{name: "bang alone", in: "!", wantErr: "unable to parse requirement: found '', expected: identifier"},
		{name: "double bang", in: "!!x", wantErr: "unable to parse requirement: found '!', expected: identifier"},
		{name: "no operator", in: "x y", wantErr: "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"},
		{name: "paren instead of operator", in: "x (a)", wantErr: "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"},
		{name: "greater or equal", in: "x>=1", wantErr: "unable to parse requirement: found '=', expected: identifier"},
		{name: "triple equals", in: "x===a", wantErr: "unable to parse requirement: found '=', expected: identifier"},
		{name: "paren as value", in: "x=)", wantErr: "unable to parse requirement: found ')', expected: identifier"},
		{name: "in without paren", in: "x in a", wantErr: "unable to parse requirement: found 'a' expected: '('"},
		{name: "in at end", in: "x in", wantErr: "unable to parse requirement: found '' expected: '('"},
		{name: "unclosed set", in: "x in (a", wantErr: "unable to parse requirement: found '', expected: ',' or ')'"},
		{name: "blank in set", in: "x in (a b)", wantErr: "unable to parse requirement: found 'b', expected: ',' or ')'"},
		{name: "operator opens set", in: "x in (=)", wantErr: "unable to parse requirement: found '=', expected: ',', ')' or identifier"},
		{name: "operator in set", in: "x in (a,=)", wantErr: "unable to parse requirement: found '=', expected: ',', or identifier"},
		{name: "unclosed after comma", in: "x in (a,", wantErr: "unable to parse requirement: found '', expected: ',', or identifier"},

		{name: "invalid key", in: "-x=a",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "-x": ` + k8sNamePartMsg},
		{name: "colon in key", in: "app:web",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "app:web": ` + k8sNamePartMsg},
		{name: "key with two slashes", in: "a/b/c",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "a/b/c": ` + k8sQualifiedNameMsg},
		{name: "empty name part", in: "x/",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "x/": name part must be non-empty; ` + k8sNamePartMsg},
		{name: "empty prefix", in: "/x",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "/x": prefix part must be non-empty`},
		{name: "uppercase prefix", in: "Example.com/x",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "Example.com/x": ` + k8sPrefixMsg},
		{name: "long key", in: long,
			wantErr: `unable to parse requirement: <nil>: Invalid value: "` + long + `": name part must be no more than 63 characters`},
		{name: "NUL is not the end", in: "x\x00y",
			wantErr: `unable to parse requirement: <nil>: Invalid value: "x\x00y": ` + k8sNamePartMsg},
		{name: "invalid value", in: "x=-a",
			wantErr: `unable to parse requirement: values[0][x]: Invalid value: "-a": ` + k8sLabelValueMsg},
		{name: "long value", in: "x=" + long,
			wantErr: `unable to parse requirement: values[0][x]: Invalid value: "` + long + `": must be no more than 63 characters`},
		{name: "invalid values indexed after sorting", in: "x in (z,-b,-a)",
			wantErr: `unable to parse requirement: [values[0][x]: Invalid value: "-a": ` + k8sLabelValueMsg +
				`, values[1][x]: Invalid value: "-b": ` + k8sLabelValueMsg + `]`},
		{name: "gt not an integer", in: "x>a",
			wantErr: `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`},
		{name: "gt empty", in: "x>",
			wantErr: `unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer`},
		{name: "lt negative is not a label value", in: "x<-1",
			wantErr: `unable to parse requirement: values[0][x]: Invalid value: "-1": ` + k8sLabelValueMsg},
		{name: "gt overflow", in: "x>99999999999999999999",
			wantErr: `unable to parse requirement: values[0]: Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := ParseLabelSelector(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseLabelSelector(%q) = %q, want error %q", tt.in, sel, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Fatalf("ParseLabelSelector(%q) error\n got: %s\nwant: %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLabelSelector(%q): %v", tt.in, err)
			}
			if got := sel.String(); got != tt.want {
				t.Fatalf("ParseLabelSelector(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if sel.Empty() != (tt.want == "") {
				t.Errorf("Empty() = %v for %q", sel.Empty(), tt.in)
			}
		})
	}
}

func TestLabelSelectorMatches(t *testing.T) {
	tests := []struct {
		sel  string
		set  Set
		want bool
	}{
		{"", nil, true},
		{"", Set{"a": "b"}, true},
		{"x=a", Set{"x": "a"}, true},
		{"x=a", Set{"x": "b"}, false},
		{"x=a", nil, false},
		{"x==a", Set{"x": "a"}, true},
		{"x=", Set{"x": ""}, true},
		{"x=", nil, false}, // unlike a field selector, the label must exist
		{"x!=a", Set{"x": "b"}, true},
		{"x!=a", Set{"x": "a"}, false},
		{"x!=a", nil, true}, // a missing label is "not equal"
		{"x in (a,b,c,d,e)", Set{"x": "c"}, true},
		{"x in (a,b,c,d,e)", Set{"x": "f"}, false},
		{"x in (a,b)", nil, false},
		{"x in ()", Set{"x": ""}, true},
		{"x notin (a,b)", Set{"x": "c"}, true},
		{"x notin (a,b)", Set{"x": "b"}, false},
		{"x notin (a,b)", nil, true},
		{"x", Set{"x": ""}, true},
		{"x", Set{"y": "x"}, false},
		{"!x", Set{"y": "x"}, true},
		{"!x", Set{"x": ""}, false},
		{"x>1", Set{"x": "2"}, true},
		{"x>1", Set{"x": "1"}, false},
		{"x>1", Set{"x": "+5"}, true}, // strconv.ParseInt accepts a sign
		{"x>1", Set{"x": "a"}, false},
		{"x>1", Set{"x": ""}, false},
		{"x>1", nil, false},
		{"x<10", Set{"x": "-3"}, true},
		{"x<10", Set{"x": "10"}, false},
		{"x<9223372036854775807", Set{"x": "-9223372036854775808"}, true},
		{"x>0", Set{"x": "9223372036854775808"}, false}, // overflow is not a number
		{"a=1,b in (2,3),!c", Set{"a": "1", "b": "3"}, true},
		{"a=1,b in (2,3),!c", Set{"a": "1", "b": "3", "c": ""}, false},
		{"a=1,b in (2,3),!c", Set{"a": "1"}, false},
	}
	for _, tt := range tests {
		sel, err := ParseLabelSelector(tt.sel)
		if err != nil {
			t.Fatalf("ParseLabelSelector(%q): %v", tt.sel, err)
		}
		if got := sel.Matches(tt.set); got != tt.want {
			t.Errorf("%q.Matches(%v) = %v, want %v", tt.sel, tt.set, got, tt.want)
		}
	}
}

func TestLabelSelectorRequiresExactMatch(t *testing.T) {
	tests := []struct {
		sel, key  string
		wantValue string
		wantFound bool
	}{
		{"", "x", "", false},
		{"x=a", "x", "a", true},
		{"x==a", "x", "a", true},
		{"x in (a)", "x", "a", true},
		{"x in (a,b)", "x", "", false},
		{"x!=a", "x", "", false},
		{"x notin (a)", "x", "", false},
		{"x", "x", "", false},
		{"x=", "x", "", true},
		{"y=b,x=a", "x", "a", true},
		{"x=a", "y", "", false},
		// Only the first requirement on the key counts, as in Kubernetes.
		{"x!=b,x=a", "x", "", false},
	}
	for _, tt := range tests {
		sel, err := ParseLabelSelector(tt.sel)
		if err != nil {
			t.Fatalf("ParseLabelSelector(%q): %v", tt.sel, err)
		}
		v, found := sel.RequiresExactMatch(tt.key)
		if v != tt.wantValue || found != tt.wantFound {
			t.Errorf("%q.RequiresExactMatch(%q) = %q, %v; want %q, %v", tt.sel, tt.key, v, found, tt.wantValue, tt.wantFound)
		}
	}
}

func TestSelectorFromSet(t *testing.T) {
	tests := []struct {
		set  Set
		want string
	}{
		{nil, ""},
		{Set{}, ""},
		{Set{"b": "2", "a": "1", "c": ""}, "a=1,b=2,c="},
	}
	for _, tt := range tests {
		sel := SelectorFromSet(tt.set)
		if got := sel.String(); got != tt.want {
			t.Errorf("SelectorFromSet(%v).String() = %q, want %q", tt.set, got, tt.want)
		}
		if !sel.Matches(tt.set) {
			t.Errorf("SelectorFromSet(%v) does not match its own set", tt.set)
		}
		if sel.Empty() != (len(tt.set) == 0) {
			t.Errorf("SelectorFromSet(%v).Empty() = %v", tt.set, sel.Empty())
		}
		parsed, err := ParseLabelSelector(sel.String())
		if err != nil || !reflect.DeepEqual(parsed, sel) {
			t.Errorf("SelectorFromSet(%v) does not round-trip: %#v, %v", tt.set, parsed, err)
		}
	}
	sel := SelectorFromSet(Set{"a": "1", "b": "2"})
	if sel.Matches(Set{"a": "1"}) || !sel.Matches(Set{"a": "1", "b": "2", "c": "3"}) {
		t.Error("SelectorFromSet must require every entry and only those")
	}
	if v, ok := sel.RequiresExactMatch("b"); v != "2" || !ok {
		t.Errorf("RequiresExactMatch(b) = %q, %v", v, ok)
	}
}

func TestEverythingAndNothing(t *testing.T) {
	for _, set := range []Set{nil, {}, {"a": "b"}} {
		if !Everything().Matches(set) {
			t.Errorf("Everything().Matches(%v) = false", set)
		}
		if Nothing().Matches(set) {
			t.Errorf("Nothing().Matches(%v) = true", set)
		}
	}
	if !Everything().Empty() || Nothing().Empty() {
		t.Error("Everything must be Empty, Nothing not")
	}
	if Everything().String() != "" || Nothing().String() != "" {
		t.Error("Everything and Nothing print as the empty string")
	}
	if _, ok := Everything().RequiresExactMatch("a"); ok {
		t.Error("Everything requires no value")
	}
	if _, ok := Nothing().RequiresExactMatch("a"); ok {
		t.Error("Nothing requires no value")
	}
}

func TestLabelSelectorAsSelector(t *testing.T) {
	tests := []struct {
		name      string
		ls        *LabelSelector
		want      string
		wantEmpty bool
		matches   Set
		wantMatch bool
		wantErr   string
	}{
		{name: "nil selects nothing", ls: nil, want: "", matches: Set{}, wantMatch: false},
		{name: "empty selects everything", ls: &LabelSelector{}, want: "", wantEmpty: true, matches: Set{}, wantMatch: true},
		{name: "empty maps select everything", ls: &LabelSelector{MatchLabels: map[string]string{}, MatchExpressions: []LabelSelectorRequirement{}},
			want: "", wantEmpty: true, matches: Set{"a": "b"}, wantMatch: true},
		{name: "match labels", ls: &LabelSelector{MatchLabels: map[string]string{"tier": "web", "app": "x"}},
			want: "app=x,tier=web", matches: Set{"app": "x", "tier": "web"}, wantMatch: true},
		{name: "expressions", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{
			{Key: "z", Operator: LabelSelectorOpNotIn, Values: []string{"b", "a", "b"}},
			{Key: "y", Operator: LabelSelectorOpDoesNotExist},
			{Key: "x", Operator: LabelSelectorOpExists},
			{Key: "w", Operator: LabelSelectorOpIn, Values: []string{"2", "1"}},
		}}, want: "w in (1,2),x,!y,z notin (a,b)", matches: Set{"w": "1", "x": "", "z": "c"}, wantMatch: true},
		{name: "labels before expressions of the same key", ls: &LabelSelector{
			MatchLabels:      map[string]string{"a": "1"},
			MatchExpressions: []LabelSelectorRequirement{{Key: "a", Operator: LabelSelectorOpIn, Values: []string{"1", "2"}}},
		}, want: "a=1,a in (1,2)", matches: Set{"a": "2"}, wantMatch: false},

		{name: "unknown operator", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "a", Operator: "Gt", Values: []string{"1"}}}},
			wantErr: `"Gt" is not a valid label selector operator`},
		{name: "in without values", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "a", Operator: LabelSelectorOpIn}}},
			wantErr: `values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`},
		{name: "exists with values", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "a", Operator: LabelSelectorOpExists, Values: []string{"x", "y"}}}},
			wantErr: `values: Invalid value: ["x","y"]: values set must be empty for exists and does not exist`},
		{name: "invalid key", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "-a", Operator: LabelSelectorOpExists}}},
			wantErr: `key: Invalid value: "-a": ` + k8sNamePartMsg},
		{name: "invalid match label value", ls: &LabelSelector{MatchLabels: map[string]string{"app": "-web"}},
			wantErr: `values[0][app]: Invalid value: "-web": ` + k8sLabelValueMsg},
		{name: "invalid key and value aggregate", ls: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "a/", Operator: LabelSelectorOpNotIn, Values: []string{"ok", "-no"}}}},
			wantErr: `[key: Invalid value: "a/": name part must be non-empty; ` + k8sNamePartMsg +
				`, values[1][a/]: Invalid value: "-no": ` + k8sLabelValueMsg + `]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before string
			if tt.ls != nil {
				b, _ := json.Marshal(tt.ls)
				before = string(b)
			}
			sel, err := tt.ls.AsSelector()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("AsSelector() error\n got: %v\nwant: %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AsSelector(): %v", err)
			}
			if got := sel.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if sel.Empty() != tt.wantEmpty {
				t.Errorf("Empty() = %v, want %v", sel.Empty(), tt.wantEmpty)
			}
			if got := sel.Matches(tt.matches); got != tt.wantMatch {
				t.Errorf("Matches(%v) = %v, want %v", tt.matches, got, tt.wantMatch)
			}
			if tt.ls != nil {
				if b, _ := json.Marshal(tt.ls); string(b) != before {
					t.Errorf("AsSelector modified its receiver: %s, was %s", b, before)
				}
				if parsed, err := ParseLabelSelector(sel.String()); err != nil || !reflect.DeepEqual(parsed, sel) {
					t.Errorf("String %q does not parse back to an equal selector: %v", sel, err)
				}
			}
		})
	}
}

func TestLabelSelectorJSON(t *testing.T) {
	tests := []struct {
		ls   LabelSelector
		want string
	}{
		{LabelSelector{}, `{}`},
		{LabelSelector{
			MatchLabels: map[string]string{"b": "2", "a": "1"},
			MatchExpressions: []LabelSelectorRequirement{
				{Key: "tier", Operator: LabelSelectorOpIn, Values: []string{"web", "db"}},
				{Key: "canary", Operator: LabelSelectorOpDoesNotExist},
			},
		}, `{"matchLabels":{"a":"1","b":"2"},"matchExpressions":[{"key":"tier","operator":"In","values":["web","db"]},{"key":"canary","operator":"DoesNotExist"}]}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.ls)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("json.Marshal = %s, want %s", b, tt.want)
		}
		var back LabelSelector
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tt.ls) {
			t.Errorf("round trip = %#v, %v", back, err)
		}
	}
}

func TestParseInt64MatchesStrconv(t *testing.T) {
	inputs := []string{
		"", "+", "-", "0", "-0", "+0", "7", "007", "-12", "+12", "1_000", "0x10", " 1", "1 ", "1.5", "1e3",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999999", "--1", "+-1", "١",
	}
	for i := 0; i < 2000; i++ {
		inputs = append(inputs, strconv.FormatInt(int64(i)*7919*1000003, 10), strconv.FormatUint(uint64(i)*0x9e3779b97f4a7c15, 10))
	}
	for _, s := range inputs {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt64(s)
		if ok != (err == nil) || (ok && got != want) {
			t.Errorf("parseInt64(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	}
}

func TestSelectorMatchesDoesNotAllocate(t *testing.T) {
	label, err := ParseLabelSelector("app=web,tier in (a,b,c,d),!canary,replicas>2,zone notin (x)")
	if err != nil {
		t.Fatal(err)
	}
	field, err := ParseFieldSelector("metadata.name=web,status.phase!=Failed")
	if err != nil {
		t.Fatal(err)
	}
	set := Set{"app": "web", "tier": "c", "replicas": "notanumber", "metadata.name": "web", "status.phase": "Running"}
	for name, sel := range map[string]Selector{"label": label, "field": field} {
		if n := testing.AllocsPerRun(100, func() { sel.Matches(set) }); n != 0 {
			t.Errorf("%s selector Matches allocates %v times", name, n)
		}
	}
}

// TestSelectorsConcurrentUse is for -race: parsed selectors are shared by
// every watcher of a resource.
func TestSelectorsConcurrentUse(t *testing.T) {
	label, _ := ParseLabelSelector("a=1,b in (2,3),c>0")
	field, _ := ParseFieldSelector("a=1,b!=2")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			set := Set{"a": "1", "b": strconv.Itoa(i%4 + 1), "c": strconv.Itoa(i)}
			for j := 0; j < 200; j++ {
				label.Matches(set)
				field.Matches(set)
				_ = label.String() + field.String()
				label.RequiresExactMatch("a")
			}
		}(i)
	}
	wg.Wait()
}

// labelSeeds are inputs every label fuzz run starts from: the grammar's
// corners and some near misses.
var labelSeeds = []string{
	"", "x", "!x", "x=a", "x==a", "x!=a", "x>1", "x<007", "x in (a,b)", "x notin (a)", "x in ()", "x in (,a,,b,)",
	"in in (in,notin)", "example.com/app=web,tier in (db,cache),!canary,replicas>2",
	" a = b , c ", "x=a=b", "x,", "!x=a", "x in (a", "-x", "a/b/c", "x\x00y", "x>=1", "k=" + strings.Repeat("v", 63),
}

func FuzzParseLabelSelector(f *testing.F) {
	for _, s := range labelSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseLabelSelector(s)
		if err != nil {
			if sel != nil {
				t.Fatalf("ParseLabelSelector(%q) returned a selector with error %v", s, err)
			}
			return
		}
		str := sel.String()
		again, err := ParseLabelSelector(str)
		if err != nil {
			t.Fatalf("ParseLabelSelector(%q).String() = %q, which does not parse: %v", s, str, err)
		}
		if !reflect.DeepEqual(sel, again) {
			t.Fatalf("round trip of %q through %q changed the selector:\n%#v\n%#v", s, str, sel, again)
		}
		if again.String() != str {
			t.Fatalf("String not canonical: %q then %q", str, again.String())
		}
		// Exercise Matches with sets built from the selector's own words.
		set := Set{}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("=!(),<> \t\r\n", r) }) {
			set[w] = w
			sel.Matches(set)
			sel.RequiresExactMatch(w)
		}
	})
}

func BenchmarkLabelSelectorMatches(b *testing.B) {
	sel, err := ParseLabelSelector("app=web,environment in (production,qa,staging),!canary,tier notin (frontend),replicas>2")
	if err != nil {
		b.Fatal(err)
	}
	set := Set{
		"app": "web", "environment": "production", "tier": "backend", "replicas": "5",
		"pod-template-hash": "5d8f7c9b6", "app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop",
	}
	b.ReportAllocs()
	for b.Loop() {
		if !sel.Matches(set) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParseLabelSelector(b *testing.B) {
	const s = "app=web,environment in (production,qa,staging),!canary,tier notin (frontend),replicas>2"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLabelSelector(s); err != nil {
			b.Fatal(err)
		}
	}
}
