package cel

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/schema"
)

// gatewaySchema is a schema in the shape of Gateway API's Gateway, with
// rules of the kinds its CRDs carry.
func gatewaySchema() *schema.Schema {
	listener := obj(
		prop("name", &schema.Schema{Type: "string", MaxLength: i64(253)}),
		prop("hostname", &schema.Schema{Type: "string", MaxLength: i64(253)}),
		prop("port", &schema.Schema{Type: "integer"}),
		prop("protocol", &schema.Schema{Type: "string", MaxLength: i64(255)}),
		prop("tls", obj(prop("mode", &schema.Schema{Type: "string", Enum: []any{"Terminate", "Passthrough"}}))),
	)
	listener.Required = []string{"name", "port", "protocol"}
	listener.Validations = []schema.ValidationRule{
		{Rule: "self.protocol in ['HTTP', 'TCP', 'UDP'] ? !has(self.tls) : true", Message: "tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"},
		{Rule: "self.protocol in ['HTTPS'] ? has(self.tls) : true", Message: "tls must be specified for protocol HTTPS"},
	}
	listeners := &schema.Schema{Type: "array", MaxItems: i64(64), ListType: schema.ListMap, ListMapKeys: []string{"name"}, Items: listener,
		Validations: []schema.ValidationRule{
			{Rule: "self.all(l1, self.exists_one(l2, l1.name == l2.name))", Message: "Listener name must be unique within the Gateway"},
			{Rule: "self.all(l1, self.exists_one(l2, l1.port == l2.port && l1.protocol == l2.protocol && (has(l1.hostname) && has(l2.hostname) ? l1.hostname == l2.hostname : !has(l1.hostname) && !has(l2.hostname))))", Message: "Combination of port, protocol and hostname must be unique for each listener"},
		}}
	addresses := &schema.Schema{Type: "array", MaxItems: i64(16), Items: obj(
		prop("type", &schema.Schema{Type: "string", MaxLength: i64(253)}),
		prop("value", &schema.Schema{Type: "string", MaxLength: i64(253)}),
	)}
	addresses.Items.Validations = []schema.ValidationRule{
		{Rule: "self.type == 'IPAddress' ? isIP(self.value) : true", Message: "value must be an IP address"},
	}
	spec := obj(prop("gatewayClassName", &schema.Schema{Type: "string", MaxLength: i64(253)}), prop("listeners", listeners), prop("addresses", addresses),
		prop("minReplicas", intS()), prop("maxReplicas", intS()),
		prop("memory", &schema.Schema{Type: "string", MaxLength: i64(32)}),
		prop("allowedCIDR", &schema.Schema{Type: "string", MaxLength: i64(43)}))
	spec.Validations = []schema.ValidationRule{
		{Rule: "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas", Message: "minReplicas must not exceed maxReplicas"},
		{Rule: "!has(self.memory) || quantity(self.memory).isLessThan(quantity('64Gi'))", Message: "memory must be below 64Gi"},
		{Rule: "self.gatewayClassName == oldSelf.gatewayClassName", Message: "gatewayClassName is immutable"},
		{Rule: "!format.dns1123Subdomain().validate(self.gatewayClassName).hasValue()", MessageExpression: "'gatewayClassName ' + self.gatewayClassName + ' must be a DNS subdomain'"},
		{Rule: "!has(self.allowedCIDR) || isCIDR(self.allowedCIDR) && cidr(self.allowedCIDR).containsIP('10.0.0.1')", Message: "allowedCIDR must contain 10.0.0.1", FieldPath: ".allowedCIDR"},
	}
	return obj(prop("spec", spec))
}

func gatewayObject() map[string]any {
	var listeners []any
	for _, l := range []struct {
		name, proto string
		port        int64
	}{{"http", "HTTP", 80}, {"https", "HTTPS", 443}, {"tcp", "TCP", 9000}} {
		m := map[string]any{"name": l.name, "protocol": l.proto, "port": l.port, "hostname": "example.com"}
		if l.proto == "HTTPS" {
			m["tls"] = map[string]any{"mode": "Terminate"}
		}
		listeners = append(listeners, m)
	}
	return map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "gw", "namespace": "default"},
		"spec": map[string]any{
			"gatewayClassName": "example", "listeners": listeners,
			"addresses":   []any{map[string]any{"type": "IPAddress", "value": "10.0.0.1"}},
			"minReplicas": int64(1), "maxReplicas": int64(3), "memory": "512Mi",
		},
	}
}

// cpuTime is the process's user and system CPU time: on a shared machine
// it moves far less than wall time, so benchmarks report it per op too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f as the benchmark's body and reports CPU time per op.
func loop(b *testing.B, f func()) {
	b.ReportAllocs()
	start, n := cpuTime(), 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

func BenchmarkCompileSchema(b *testing.B) {
	s := gatewaySchema()
	loop(b, func() {
		if _, errs := CompileSchema(s, crdPath); len(errs) > 0 {
			b.Fatal(errs)
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	v, errs := CompileSchema(gatewaySchema(), crdPath)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	o, old := gatewayObject(), gatewayObject()
	ctx := context.Background()
	loop(b, func() {
		if res := v.Validate(ctx, nil, o, old); len(res.Errors) > 0 {
			b.Fatal(res.Errors)
		}
	})
}

func BenchmarkComprehension(b *testing.B) {
	s := obj(prop("l", withRules(&schema.Schema{Type: "array", MaxItems: i64(1000), Items: intS()},
		schema.ValidationRule{Rule: "self.all(x, x >= 0)"})))
	v, errs := CompileSchema(s, crdPath)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	l := make([]any, 1000)
	for i := range l {
		l[i] = int64(i)
	}
	o := map[string]any{"l": l}
	loop(b, func() {
		if res := v.Validate(context.Background(), nil, o, nil); len(res.Errors) > 0 {
			b.Fatal(res.Errors)
		}
	})
}
