package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/core"
	"github.com/apikit-dev/apikit/gc"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/extensions"
	"github.com/apikit-dev/apikit/testenv"
)

// startCoreChain runs, in this process, the chain examples/controlplane
// builds: the extensions server behind a core server (the core group,
// NamespaceLifecycle, the garbage collector and the namespace controller,
// the system APIs), and returns a Wardle whose kubectl talks to it.
func startCoreChain(t *testing.T) *Wardle {
	t.Helper()
	env := testenv.Start(t, func(c *server.Config) (*server.GenericServer, error) {
		c.GarbageCollection = true
		coreAPI, err := core.New(core.ConfigFor(c))
		if err != nil {
			return nil, err
		}
		c.Admission = append(admission.Chain{coreAPI.NamespaceLifecycle()}, c.Admission...)
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		ext, err := extensions.New(completed, nil, extensions.Config{})
		if err != nil {
			return nil, err
		}
		srv, err := completed.New("core", ext.GenericServer)
		if err != nil {
			return nil, err
		}
		if err := coreAPI.Install(srv); err != nil {
			return nil, err
		}
		if err := gc.Install(srv, c.Logger); err != nil {
			return nil, err
		}
		return srv, nil
	})
	if filepath.Base(env.Kubeconfig) != "kubeconfig" {
		t.Fatalf("testenv's kubeconfig is %s, not <dir>/kubeconfig", env.Kubeconfig)
	}
	return &Wardle{t: t, DataDir: filepath.Dir(env.Kubeconfig)}
}

// TestGarbageCollectionAcrossChain: a core server's garbage collector
// follows the custom resources of a CRD created while it runs, served by
// the extensions server behind it: a widget owned by a configmap goes with
// it (background), a configmap owned by a widget likewise, and a
// configmap deleted in the foreground waits for its blocking widget.
func TestGarbageCollectionAcrossChain(t *testing.T) {
	w := startCoreChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	uid := func(kind, name string) string {
		t.Helper()
		return strings.TrimSpace(w.Kubectl("get", kind, name, "-n", "default", "-o", "jsonpath={.metadata.uid}"))
	}
	owned := func(apiVersion, kind, name string) string {
		return fmt.Sprintf(`,"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"blockOwnerDeletion":true}]`,
			apiVersion, kind, name, uid(strings.ToLower(kind), name))
	}
	widget := func(name, refs string) {
		t.Helper()
		w.KubectlStdin(fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":%q,"namespace":"default"%s}}`, name, refs), "create", "-f", "-")
	}
	configmap := func(name, refs string) {
		t.Helper()
		w.KubectlStdin(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"%s}}`, name, refs), "create", "-f", "-")
	}
	gone := func(kind, name string) {
		t.Helper()
		poll(t, kind+" "+name+" collected", func() (bool, string) {
			out := w.Kubectl("get", kind, "-n", "default", "-o", "name", "--ignore-not-found", "--field-selector=metadata.name="+name)
			return strings.TrimSpace(out) == "", out
		})
	}

	configmap("cm-owner", "")
	widget("w-child", owned("v1", "ConfigMap", "cm-owner"))
	w.Kubectl("delete", "configmap", "cm-owner", "-n", "default", "--cascade=background")
	gone("widgets", "w-child")

	widget("w-owner", "")
	configmap("cm-child", owned("example.com/v1", "Widget", "w-owner"))
	w.Kubectl("delete", "widget", "w-owner", "-n", "default", "--cascade=background")
	gone("configmaps", "cm-child")

	configmap("fg-owner", "")
	widget("fg-child", owned("v1", "ConfigMap", "fg-owner"))
	// kubectl waits for the owner, which goes after its dependent.
	w.Kubectl("delete", "configmap", "fg-owner", "-n", "default", "--cascade=foreground")
	gone("configmaps", "fg-owner")
	if out := w.Kubectl("get", "widgets", "-n", "default", "-o", "name"); strings.Contains(out, "fg-child") {
		t.Errorf("the configmap went before its blocking widget: %s", out)
	}
}

// TestNamespaceDeletionWithCustomResources: deleting a namespace through
// kubectl deletes the custom resources in it (their CRD created while the
// server runs, served by the extensions server behind the core server),
// with kube's conditions while one is held by a finalizer, then the
// namespace.
func TestNamespaceDeletionWithCustomResources(t *testing.T) {
	w := startCoreChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	w.Kubectl("create", "ns", "doomed")
	w.Kubectl("create", "configmap", "inside", "-n", "doomed", "--from-literal=a=b")
	w.KubectlStdin(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"plain","namespace":"doomed"}}`, "create", "-f", "-")
	w.KubectlStdin(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"held","namespace":"doomed","finalizers":["example.com/hold"]}}`, "create", "-f", "-")
	w.Kubectl("delete", "ns", "doomed", "--wait=false")
	poll(t, "the content deleted, the held widget reported", func() (bool, string) {
		out := w.Kubectl("get", "cm,widgets", "-n", "doomed", "-o", "name")
		remaining := w.Kubectl("get", "ns", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceContentRemaining")].message}`)
		fins := w.Kubectl("get", "ns", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
		return strings.TrimSpace(out) == "widget.example.com/held" &&
				remaining == "Some resources are remaining: widgets.example.com has 1 resource instances" &&
				fins == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
			out + " | " + remaining + " | " + fins
	})
	w.Kubectl("patch", "widget", "held", "-n", "doomed", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	poll(t, "the namespace gone", func() (bool, string) {
		_, errOut, err := w.kubectlRaw(t.Context(), "get", "ns", "doomed")
		return err != nil && strings.Contains(errOut, `namespaces "doomed" not found`), errOut
	})
}
