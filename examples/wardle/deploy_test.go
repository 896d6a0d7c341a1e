package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server/aggregator"
)

// TestDeployManifests checks deploy/ against the code: every document
// parses, the APIServices are valid and name the Service, the Service is
// the name wardle's certificate must carry, and the Deployment's flags are
// wardle's.
func TestDeployManifests(t *testing.T) {
	ca, err := certs.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("deploy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	kinds := map[string][]string{}
	var args []string
	var apiServices []aggregator.APIService
	for _, f := range files {
		if strings.HasSuffix(f, ".generated.yaml") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.ReplaceAll(data, []byte("CA_BUNDLE"), []byte(base64.StdEncoding.EncodeToString(ca.CertPEM)))
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name, Namespace string
				} `json:"metadata"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Args []string `json:"args"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kinds[obj.Kind] = append(kinds[obj.Kind], obj.Metadata.Namespace+"/"+obj.Metadata.Name)
			switch obj.Kind {
			case "Deployment":
				args = obj.Spec.Template.Spec.Containers[0].Args
			case "APIService":
				var s aggregator.APIService
				if err := yaml.UnmarshalStrict(doc, &s); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if errs := aggregator.ValidateAPIService(&s); len(errs) > 0 {
					t.Errorf("%s: %v", s.Name, errs)
				}
				apiServices = append(apiServices, s)
			}
		}
	}
	for kind, want := range map[string][]string{
		"Service":            {"wardle/api"},
		"ClusterRoleBinding": {"/wardle:system:auth-delegator"},
		"RoleBinding":        {"kube-system/wardle-auth-reader"},
		"Deployment":         {"wardle/wardle"},
	} {
		if !slices.Equal(kinds[kind], want) {
			t.Errorf("%s: %q, want %q", kind, kinds[kind], want)
		}
	}
	if len(apiServices) != 2 {
		t.Fatalf("%d APIServices", len(apiServices))
	}
	for _, s := range apiServices {
		svc := s.Spec.Service
		if svc.Name+"."+svc.Namespace+".svc" != serviceDNSName {
			t.Errorf("%s names the Service %s/%s; wardle's certificate is for %s", s.Name, svc.Namespace, svc.Name, serviceDNSName)
		}
	}
	o := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("wardle", pflag.ContinueOnError)
	fss := o.Flags()
	for _, n := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[n])
	}
	if err := fs.Parse(args); err != nil {
		t.Errorf("the Deployment's args %q: %v", args, err)
	}
	if o.Authentication.RemoteKubeconfigFile == "" || o.Authorization.RemoteKubeconfigFile == "" {
		t.Error("the Deployment does not delegate authentication and authorization")
	}
}
