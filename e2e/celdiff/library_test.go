package celdiff

import (
	"fmt"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	kubelibrary "k8s.io/apiserver/pkg/cel/library"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
)

// outcome is what an expression does: its result or error, its estimated
// cost and its actual cost.
type outcome struct {
	compileErr string
	result     string
	evalErr    string
	estimate   uint64
	cost       uint64
}

func evalIn(env *celgo.Env, opts []celgo.ProgramOption, expr string, estimate func(*celgo.Ast) uint64) outcome {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return outcome{compileErr: iss.String()}
	}
	o := outcome{estimate: estimate(ast)}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return outcome{compileErr: err.Error()}
	}
	v, det, err := prg.Eval(celgo.NoVars())
	if det != nil && det.ActualCost() != nil {
		o.cost = *det.ActualCost()
	}
	if err != nil {
		o.evalErr = err.Error()
		return o
	}
	o.result = fmt.Sprintf("%v", v.Value())
	if l, ok := v.Value().([]string); ok {
		o.result = strings.Join(l, "|")
	}
	return o
}

// TestLibraryMatchesKube evaluates the libraries' functions in both base
// environments (kube-apiserver 1.37's at its 1.36 compatibility version):
// results, error texts, estimated and actual costs must agree.
func TestLibraryMatchesKube(t *testing.T) {
	kubeEnv, err := environment.MustBaseEnvSet(version.MajorMinor(1, 36)).Env(environment.NewExpressions)
	if err != nil {
		t.Fatal(err)
	}
	apikitEnv, err := cel.BaseEnv()
	if err != nil {
		t.Fatal(err)
	}
	kubeEst := &kubelibrary.CostEstimator{}
	apikitEst := &library.CostEstimator{}
	exprs := []string{
		// lists
		"[1, 2, 3].isSorted()", "['b', 'a'].isSorted()", "[1, 2, 3].sum()", "[1.5, 2.5].sum()", "[3, 1, 2].min()",
		"['a', 'c', 'b'].max()", "[0].filter(x, x > 0).max()", "[1, 2, 1].indexOf(1)", "[1, 2, 1].lastIndexOf(1)",
		"[3, 1, 2].sort()", "[[1], [2]].flatten()", "lists.range(3)", "[1, 2, 2].distinct()",
		// regex
		"'abc 123'.find('[0-9]+')", "'1 2 3'.findAll('[0-9]')", "'1 2 3'.findAll('[0-9]', 2)", "'abc'.find(dyn('['))",
		// strings
		"'Hello'.lowerAscii()", "'a,b,c'.split(',')", "['a', 'b'].join('-')", "'abc'.replace('b', 'xx')", "'  x '.trim()",
		// URLs
		"url('https://example.com:8443/a%20b?x=1&x=2').getScheme()", "url('https://example.com:8443/p').getHost()",
		"url('https://[::1]:80/').getHostname()", "url('https://example.com:8443/').getPort()",
		"url('https://example.com/a%20b').getEscapedPath()", "isURL('https://example.com')", "isURL('not a url')",
		"url('not a url')", "url('/relative/path').getHost()", "url('https://e.com') == url('https://e.com')",
		// IPs and CIDRs
		"isIP('10.0.0.1')", "isIP('::ffff:1.2.3.4')", "isIP('fe80::1%eth0')", "ip('10.0.0.1').family()",
		"ip('::1').isLoopback()", "ip('0.0.0.0').isUnspecified()", "ip('fe80::1').isLinkLocalUnicast()",
		"ip('224.0.0.1').isLinkLocalMulticast()", "ip('8.8.8.8').isGlobalUnicast()", "ip.isCanonical('2001:db8::1')",
		"ip.isCanonical('2001:DB8::1')", "string(ip('10.0.0.1'))", "ip('10.0.0.256')", "ip('::ffff:1.2.3.4')",
		"ip('10.0.0.1') == ip('10.0.0.1')", "cidr('10.0.0.0/8').containsIP('10.1.2.3')",
		"cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
		"cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
		"string(cidr('10.1.2.3/8').masked())", "cidr('10.0.0.0/8').prefixLength()", "string(cidr('10.1.2.3/8').ip())",
		"isCIDR('10.0.0.0/33')", "cidr('10.0.0.0/33')", "cidr('::ffff:1.2.3.4/120')",
		// quantities
		"quantity('1Gi') == quantity('1024Mi')", "quantity('500m').isLessThan(quantity('1'))",
		"quantity('1k').isGreaterThan(quantity('999'))", "quantity('1.5').compareTo(quantity('1500m'))",
		"quantity('1.5').isInteger()", "quantity('2e3').asInteger()", "quantity('1.5').asInteger()",
		"quantity('1.5').asApproximateFloat()", "quantity('-1').sign()", "sign(quantity('-1'))", "quantity('1').add(quantity('500m')) == quantity('1.5')",
		"quantity('1').add(2) == quantity('3')", "quantity('1').sub(1).sign()", "isQuantity('1.5Gi')", "isQuantity('1.5Gb')",
		"isQuantity('')", "quantity('1.5mi')", "quantity('abc')", "quantity('100E').asInteger()", "quantity('0.0000000001').isInteger()",
		"quantity('1e40').asApproximateFloat()",
		// formats
		"format.dns1123Label().validate('my-name')", "format.dns1123Label().validate('My_Name')",
		"format.dns1123Subdomain().validate('-a.b')", "format.dns1035Label().validate('1abc')",
		"format.dns1123LabelPrefix().validate('abc-')", "format.qualifiedName().validate('a/b/c')",
		"format.labelValue().validate('-bad-')", "format.named('labelValue').value().validate('ok.value')",
		"format.named('nope').hasValue()", "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')",
		"format.uuid().validate('nope')", "format.byte().validate('!!')", "format.byte().validate('aGVsbG8=')",
		"format.date().validate('2021-02-30')", "format.date().validate('2021-02-28')",
		"format.datetime().validate('2021-01-01T00:00:00Z')", "format.datetime().validate('2021-01-01')",
		"format.uri().validate('https://example.com')", "format.uri().validate('not a uri')",
		// semver
		"semver('1.2.3').major()", "semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))",
		"semver('1.10.0').isGreaterThan(semver('1.9.0'))", "semver('1.0.0-alpha.2').compareTo(semver('1.0.0-alpha.10'))",
		"semver('1.2.3+build') == semver('1.2.3')", "isSemver('1.2')", "isSemver('v1.2', true)",
		"semver('v01.2', true).minor()", "semver('1.02.3')", "semver('1.2')", "semver('')", "semver('1.2.3-')",
		"semver('1.2.3-01')", "semver('1.2.3+a..b')", "semver('a.b.c')",
		// language
		"1 < 1.5", "optional.of(1).orValue(2)", "{'a': 1}.all(k, v, k == 'a' && v == 1)", "sets.contains([1, 2], [2])",
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			kube := evalIn(kubeEnv, []celgo.ProgramOption{celgo.EvalOptions(celgo.OptTrackCost), celgo.CostTracking(kubeEst)}, expr,
				func(a *celgo.Ast) uint64 {
					e, err := kubeEnv.EstimateCost(a, kubeEst)
					if err != nil {
						return 0
					}
					return e.Max
				})
			apikit := evalIn(apikitEnv, []celgo.ProgramOption{celgo.EvalOptions(celgo.OptTrackCost), celgo.CostTracking(apikitEst)}, expr,
				func(a *celgo.Ast) uint64 {
					e, err := apikitEnv.EstimateCost(a, apikitEst)
					if err != nil {
						return 0
					}
					return e.Max
				})
			if apikit != kube {
				t.Errorf("\napikit: %+v\n  kube: %+v", apikit, kube)
			}
		})
	}
}
