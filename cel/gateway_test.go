package cel

import (
	"context"
	"strings"
	"testing"
)

// TestGatewayStyleRules runs rules of the kinds Gateway API's CRDs carry —
// has(), exists_one over a map list, transition rules, quantities, CIDRs
// and formats — through compilation (within kube's cost budget) and
// validation.
func TestGatewayStyleRules(t *testing.T) {
	v := compile(t, gatewaySchema())
	type mutation func(spec map[string]any)
	listener := func(spec map[string]any, i int) map[string]any {
		return spec["listeners"].([]any)[i].(map[string]any)
	}
	tests := []struct {
		name   string
		change mutation
		want   []string
	}{{
		name: "valid",
	}, {
		name:   "https without tls",
		change: func(s map[string]any) { delete(listener(s, 1), "tls") },
		want:   []string{`spec.listeners[1]: Invalid value: tls must be specified for protocol HTTPS`},
	}, {
		name:   "http with tls",
		change: func(s map[string]any) { listener(s, 0)["tls"] = map[string]any{"mode": "Terminate"} },
		want:   []string{`spec.listeners[0]: Invalid value: tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']`},
	}, {
		name:   "duplicate listener name",
		change: func(s map[string]any) { listener(s, 2)["name"] = "http" },
		want:   []string{`spec.listeners: Invalid value: Listener name must be unique within the Gateway`},
	}, {
		name:   "duplicate port, protocol and hostname",
		change: func(s map[string]any) { listener(s, 2)["port"] = int64(80); listener(s, 2)["protocol"] = "HTTP" },
		want:   []string{`spec.listeners: Invalid value: Combination of port, protocol and hostname must be unique for each listener`},
	}, {
		name:   "class name changed",
		change: func(s map[string]any) { s["gatewayClassName"] = "other" },
		want:   []string{`spec: Invalid value: gatewayClassName is immutable`},
	}, {
		name:   "class name not a subdomain",
		change: func(s map[string]any) { s["gatewayClassName"] = "Bad_Name" },
		want: []string{
			`spec: Invalid value: gatewayClassName is immutable`,
			`spec: Invalid value: gatewayClassName Bad_Name must be a DNS subdomain`,
		},
	}, {
		name:   "replicas",
		change: func(s map[string]any) { s["minReplicas"] = int64(5) },
		want:   []string{`spec: Invalid value: minReplicas must not exceed maxReplicas`},
	}, {
		name:   "memory quantity",
		change: func(s map[string]any) { s["memory"] = "128Gi" },
		want:   []string{`spec: Invalid value: memory must be below 64Gi`},
	}, {
		name:   "cidr",
		change: func(s map[string]any) { s["allowedCIDR"] = "192.168.0.0/16" },
		want:   []string{`spec.allowedCIDR: Invalid value: allowedCIDR must contain 10.0.0.1`},
	}, {
		name:   "address not an IP",
		change: func(s map[string]any) { s["addresses"].([]any)[0].(map[string]any)["value"] = "example.com" },
		want:   []string{`spec.addresses[0]: Invalid value: value must be an IP address`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := gatewayObject()
			if tc.change != nil {
				tc.change(o["spec"].(map[string]any))
			}
			res := v.Validate(context.Background(), nil, o, gatewayObject())
			if got := strings.Join(messages(res.Errors), "\n"); got != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}
