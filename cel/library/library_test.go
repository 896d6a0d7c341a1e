package library_test

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	apikitcel "github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
)

// eval compiles expr in kube's base environment and evaluates it, with
// cost tracking as kube evaluates rules.
func eval(t *testing.T, expr string) (ref.Val, uint64, error) {
	t.Helper()
	env, err := apikitcel.BaseEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, 0, iss.Err()
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptTrackCost), cel.CostTracking(&library.CostEstimator{}))
	if err != nil {
		return nil, 0, err
	}
	v, det, err := prg.Eval(cel.NoVars())
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	return v, cost, err
}

func TestLibraryFunctions(t *testing.T) {
	tests := []struct {
		expr string
		// want is the result as a Go value; wantErr a substring of the
		// error. Expressions are bool-valued where no want is given.
		want    any
		wantErr string
	}{
		// lists
		{expr: "[1, 2, 3].isSorted()", want: true},
		{expr: "['b', 'a'].isSorted()", want: false},
		{expr: "[1, 2, 3].sum()", want: int64(6)},
		{expr: "[1.5, 2.5].sum()", want: 4.0},
		{expr: "[duration('1s'), duration('2s')].sum() == duration('3s')", want: true},
		{expr: "dyn([]).sum()", want: int64(0)},
		{expr: "[3, 1, 2].min()", want: int64(1)},
		{expr: "['a', 'c', 'b'].max()", want: "c"},
		{expr: "dyn([]).max()", wantErr: "max called on empty list"},
		{expr: "[0].filter(x, x > 0).max()", wantErr: "max called on empty list"},
		{expr: "[1, 2, 1].indexOf(1)", want: int64(0)},
		{expr: "[1, 2, 1].lastIndexOf(1)", want: int64(2)},
		{expr: "[1, 2].indexOf(3)", want: int64(-1)},
		// regex
		{expr: "'abc 123'.find('[0-9]+')", want: "123"},
		{expr: "'abc'.find('[0-9]+')", want: ""},
		{expr: "'1 2 3'.findAll('[0-9]')", want: []string{"1", "2", "3"}},
		{expr: "'1 2 3'.findAll('[0-9]', 2)", want: []string{"1", "2"}},
		// A constant pattern is compiled with the program, as kube's is.
		{expr: "'abc'.find(dyn('['))", wantErr: "error parsing regexp: missing closing ]"},
		// URLs
		{expr: "url('https://example.com:8443/a%20b?x=1&x=2').getScheme()", want: "https"},
		{expr: "url('https://example.com:8443/path').getHost()", want: "example.com:8443"},
		{expr: "url('https://[::1]:80/').getHostname()", want: "::1"},
		{expr: "url('https://example.com:8443/').getPort()", want: "8443"},
		{expr: "url('https://example.com/a%20b').getEscapedPath()", want: "/a%20b"},
		{expr: "url('https://example.com/?x=1&x=2').getQuery()['x']", want: []string{"1", "2"}},
		{expr: "isURL('https://example.com')", want: true},
		{expr: "isURL('not a url')", want: false},
		{expr: "url('not a url')", wantErr: "URL parse error during conversion from string"},
		// IPs and CIDRs
		{expr: "isIP('10.0.0.1')", want: true},
		{expr: "isIP('::ffff:1.2.3.4')", want: false},
		{expr: "isIP('fe80::1%eth0')", want: false},
		{expr: "ip('10.0.0.1').family()", want: int64(4)},
		{expr: "ip('::1').isLoopback()", want: true},
		{expr: "ip('0.0.0.0').isUnspecified()", want: true},
		{expr: "ip('fe80::1').isLinkLocalUnicast()", want: true},
		{expr: "ip('224.0.0.1').isLinkLocalMulticast()", want: true},
		{expr: "ip('8.8.8.8').isGlobalUnicast()", want: true},
		{expr: "ip.isCanonical('2001:db8::1')", want: true},
		{expr: "ip.isCanonical('2001:DB8::1')", want: false},
		{expr: "string(ip('10.0.0.1'))", want: "10.0.0.1"},
		{expr: "ip('10.0.0.256')", wantErr: `IP Address "10.0.0.256" parse error during conversion from string`},
		{expr: "ip('10.0.0.1') == ip('10.0.0.1')", want: true},
		{expr: "cidr('10.0.0.0/8').containsIP('10.1.2.3')", want: true},
		{expr: "cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", want: false},
		{expr: "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", want: true},
		{expr: "cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", want: false},
		{expr: "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", want: true},
		{expr: "cidr('10.0.0.0/8').prefixLength()", want: int64(8)},
		{expr: "string(cidr('10.1.2.3/8').ip())", want: "10.1.2.3"},
		{expr: "isCIDR('10.0.0.0/33')", want: false},
		{expr: "cidr('10.0.0.0/33')", wantErr: "network address parse error during conversion from string"},
		// quantities
		{expr: "quantity('1Gi') == quantity('1024Mi')", want: true},
		{expr: "quantity('500m').isLessThan(quantity('1'))", want: true},
		{expr: "quantity('1k').isGreaterThan(quantity('999'))", want: true},
		{expr: "quantity('1.5').compareTo(quantity('1500m'))", want: int64(0)},
		{expr: "quantity('1.5').isInteger()", want: false},
		{expr: "quantity('2e3').asInteger()", want: int64(2000)},
		{expr: "quantity('1.5').asInteger()", wantErr: "cannot convert value to integer"},
		{expr: "quantity('1.5').asApproximateFloat()", want: 1.5},
		{expr: "sign(quantity('-1'))", want: int64(-1)},
		{expr: "quantity('1').add(quantity('500m')) == quantity('1.5')", want: true},
		{expr: "quantity('1').add(2) == quantity('3')", want: true},
		{expr: "sign(quantity('1').sub(quantity('1500m')))", want: int64(-1)},
		{expr: "sign(quantity('1').sub(1))", want: int64(0)},
		{expr: "isQuantity('1.5Gi')", want: true},
		{expr: "isQuantity('1.5Gb')", want: false},
		{expr: "isQuantity('')", want: false},
		{expr: "quantity('1.5mi')", wantErr: "unable to parse quantity's suffix"},
		{expr: "quantity('abc')", wantErr: "quantities must match the regular expression"},
		// formats
		{expr: "format.dns1123Label().validate('my-name').hasValue()", want: false},
		{expr: "format.dns1123Label().validate('My_Name').value()[0]", want: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{expr: "format.dns1035Label().validate('1abc').hasValue()", want: true},
		{expr: "format.dns1123LabelPrefix().validate('abc-').hasValue()", want: false},
		{expr: "format.named('labelValue').value().validate('ok.value').hasValue()", want: false},
		{expr: "format.named('nope').hasValue()", want: false},
		{expr: "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", want: false},
		{expr: "format.byte().validate('!!').value()", want: []string{"invalid base64"}},
		{expr: "format.date().validate('2021-02-30').value()", want: []string{"invalid date"}},
		{expr: "format.datetime().validate('2021-01-01T00:00:00Z').hasValue()", want: false},
		{expr: "format.uri().validate('https://example.com').hasValue()", want: false},
		// semver
		{expr: "semver('1.2.3').major()", want: int64(1)},
		{expr: "semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))", want: true},
		{expr: "semver('1.10.0').isGreaterThan(semver('1.9.0'))", want: true},
		{expr: "semver('1.0.0-alpha.2').compareTo(semver('1.0.0-alpha.10'))", want: int64(-1)},
		{expr: "semver('1.2.3+build') == semver('1.2.3')", want: true},
		{expr: "isSemver('1.2')", want: false},
		{expr: "isSemver('v1.2', true)", want: true},
		{expr: "semver('v01.2', true).minor()", want: int64(2)},
		{expr: "semver('1.02.3')", wantErr: `Minor number must not contain leading zeroes "02"`},
		// cel-go's libraries kube enables
		{expr: "'a,b'.split(',')", want: []string{"a", "b"}},
		{expr: "sets.contains([1, 2, 3], [2])", want: true},
		{expr: "{'a': 1}.all(k, v, k == 'a' && v == 1)", want: true},
		{expr: "optional.of(1).orValue(2)", want: int64(1)},
		{expr: "1 < 1.5", want: true},
		{expr: "[3, 1, 2].sort() == [1, 2, 3] && [[1], [2]].flatten() == [1, 2] && lists.range(3) == [0, 1, 2]", want: true},
		{expr: "[1, 2, 2].distinct().reverse().slice(0, 1) == [2]", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, _, err := eval(t, tc.expr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q (result %v)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := types.DefaultTypeAdapter.NativeToValue(tc.want)
			if got.Equal(want) != types.True {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLibraryRuntimeCost(t *testing.T) {
	long := strings.Repeat("a", 1000)
	tests := []struct {
		expr string
		want uint64
	}{
		// kube charges string traversal: 0.1 per character, here 100 for
		// 1000 characters; literals are free, a comparison of "" costs 0.
		{expr: "isQuantity('" + long + "')", want: 100},
		{expr: "'" + long + "'.lowerAscii() != ''", want: 100},
		// quantity() of 1 character: ceil(0.1) each, and 1 for the test.
		{expr: "quantity('1').isLessThan(quantity('2'))", want: 3},
		// sum: one per element, == 1; the constant list is built once,
		// with the program, as kube's are.
		{expr: "[1, 2, 3].sum() == 6", want: 4},
		// ip(): ceil(0.8) for 8 characters, family() 1, == 1.
		{expr: "ip('10.0.0.1').family() == 4", want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.expr[:min(len(tc.expr), 40)], func(t *testing.T) {
			_, cost, err := eval(t, tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if cost != tc.want {
				t.Fatalf("cost %d, want %d", cost, tc.want)
			}
		})
	}
}
