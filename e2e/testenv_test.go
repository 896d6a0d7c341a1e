package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/testenv"
)

// startInProcess starts the wardle API in this process with testenv, for
// tests that need a server but not a process of their own (no signals, no
// restarts, no etcd), and returns a dynamic client for the admin.
func startInProcess(t *testing.T) (*testenv.Env, dynamic.Interface) {
	t.Helper()
	env := testenv.Start(t, wardleapi.Build, testenv.Configure(func(o *options.ServerRunOptions) {
		o.Authorization.RBACPolicy.ClusterRoles = append(o.Authorization.RBACPolicy.ClusterRoles, wardleapi.ClusterRoles()...)
	}))
	cfg := &rest.Config{Host: env.Host, QPS: 1000, Burst: 1000, TLSClientConfig: rest.TLSClientConfig{
		CAData: env.CAData, CertData: env.CertData, KeyData: env.KeyData}}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env, client
}

// TestTestEnv: a user's test gets a complete server from testenv in one
// call and talks to it with client-go (a rest.Config from the Env's fields,
// or its kubeconfig) and kubectl.
func TestTestEnv(t *testing.T) {
	env, client := startInProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := client.Resource(flundersGVR).Namespace("env")

	w, err := res.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := res.Create(ctx, newFlunder("env", "one", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Errorf("first watch event %s %v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the create")
	}

	// The kubeconfig works for clientcmd and kubectl alike.
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fromKubeconfig, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := fromKubeconfig.Resource(flundersGVR).Namespace("env").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "one" {
		t.Fatalf("list through the kubeconfig: %v, %v", list, err)
	}
	out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", env.Kubeconfig, "get", "flunders", "-n", "env", "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "flunder.wardle.example.com/one" {
		t.Errorf("kubectl get flunders: %v\n%s", err, out)
	}
	// RBAC is on: a user of the development CA has only what it grants.
	bob, err := env.NewUser("bob")
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.CommandContext(ctx, "kubectl", "--kubeconfig", bob.Kubeconfig, "auth", "can-i", "list", "flunders", "-n", "env").CombinedOutput()
	if strings.TrimSpace(string(out)) != "no" {
		t.Errorf("kubectl auth can-i as bob: %v\n%s", err, out)
	}
}
