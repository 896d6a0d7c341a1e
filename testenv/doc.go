// Package testenv starts a complete apikit server in-process for a test, in
// one call: kube-apiserver's flags at their defaults (RBAC, priority and
// fairness, the authentication and authorization review APIs, the
// development PKI) on the memory backend, listening on a free loopback
// port, with the API groups the caller's build function installs. It
// hands back what a client needs: the URL, the CA and an admin client
// certificate (the fields of client-go's rest.Config and its
// TLSClientConfig) and a kubeconfig file for clientcmd or kubectl. It is
// what controller-runtime's envtest gives, without binaries to download;
// the server stops when the test ends.
//
// A test with client-go:
//
//	env := testenv.Start(t, build)
//	cfg := &rest.Config{Host: env.Host, TLSClientConfig: rest.TLSClientConfig{
//		CAData: env.CAData, CertData: env.CertData, KeyData: env.KeyData}}
//	// or: cfg, _ := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
//
// apikit itself depends on neither client-go nor the testing package's
// users: Start takes a testing.TB.
package testenv
