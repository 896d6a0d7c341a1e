package options

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage/etcd3"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCommandOnEtcdServers runs the command against a separate etcd
// (--etcd-servers, --etcd-prefix): what it writes is in etcd under the
// prefix, and a second run sees it.
func TestCommandOnEtcdServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd process")
	}
	endpoints := etcdtest.Start(t)
	args := []string{"--etcd-servers=" + endpoints[0], "--etcd-prefix=/apikit-options-test"}
	r := runCommand(t, args...)
	if code, body := r.do("POST", "/apis/test.example.com/v1/widgets", `{"metadata":{"name":"w1"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := etcd3.Dial(ctx, etcd3.Config{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, "/apikit-options-test/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	// The widget, the RBAC bootstrap policy (the default mode) and the
	// default flow-control configuration (priority and fairness is on).
	var widgets []string
	rbacKeys, apfKeys := 0, 0
	for _, kv := range resp.Kvs {
		switch k := string(kv.Key); {
		case strings.HasPrefix(k, "/apikit-options-test/test.example.com/widgets/"):
			widgets = append(widgets, k)
		case strings.HasPrefix(k, "/apikit-options-test/rbac.authorization.k8s.io/"):
			rbacKeys++
		case strings.HasPrefix(k, "/apikit-options-test/flowcontrol.apiserver.k8s.io/"):
			apfKeys++
		default:
			t.Errorf("unexpected key %s", k)
		}
	}
	if len(widgets) != 1 || rbacKeys == 0 || apfKeys == 0 {
		t.Fatalf("keys under the prefix: %v", resp.Kvs)
	}
	t.Logf("stored as %s", widgets[0])

	r2 := runCommand(t, args...)
	if code, body := r2.do("GET", "/apis/test.example.com/v1/widgets/w1", ""); code != http.StatusOK {
		t.Fatalf("after restart: %d %s", code, body)
	}
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
}
