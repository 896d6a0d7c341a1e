// Package delegation reads what a front server tells the API servers
// behind it about authentication: the ConfigMap
// kube-system/extension-apiserver-authentication that kube-apiserver
// writes (its client CA, and the front proxy's CA, allowed names and
// headers), as k8s.io/apiserver's delegated authentication does. A Source
// fetches it once at start (Fetch) and then watches it (Run), so that a
// rotated CA or a changed header reaches the server without a restart;
// ClientCA and RequestHeader are the CA provider and the front-proxy
// authenticator that always use its latest content. It sits in the
// authentication step of a delegated server's request path.
package delegation

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
)

// Where kube-apiserver publishes it.
const (
	Namespace = "kube-system"
	Name      = "extension-apiserver-authentication"
)

// The ConfigMap's keys, as kube-apiserver writes them: PEM bundles for the
// two CAs, JSON arrays of strings for the rest.
const (
	KeyClientCA            = "client-ca-file"
	KeyRequestHeaderCA     = "requestheader-client-ca-file"
	KeyAllowedNames        = "requestheader-allowed-names"
	KeyUsernameHeaders     = "requestheader-username-headers"
	KeyUIDHeaders          = "requestheader-uid-headers"
	KeyGroupHeaders        = "requestheader-group-headers"
	KeyExtraHeaderPrefixes = "requestheader-extra-headers-prefix"
)

// Info is the content of the ConfigMap.
type Info struct {
	// ClientCA verifies client certificates of the front server's users
	// (client-ca-file); empty when the front server has none.
	ClientCA []byte
	// RequestHeaderCA verifies the front proxy's client certificate
	// (requestheader-client-ca-file); empty when there is no front proxy.
	RequestHeaderCA []byte
	// The front proxy's allowed common names and headers.
	AllowedNames, UsernameHeaders, UIDHeaders, GroupHeaders, ExtraHeaderPrefixes []string
}

// Parse reads the ConfigMap's data.
func Parse(data map[string]string) (Info, error) {
	info := Info{ClientCA: []byte(data[KeyClientCA]), RequestHeaderCA: []byte(data[KeyRequestHeaderCA])}
	for key, dst := range map[string]*[]string{
		KeyAllowedNames: &info.AllowedNames, KeyUsernameHeaders: &info.UsernameHeaders, KeyUIDHeaders: &info.UIDHeaders,
		KeyGroupHeaders: &info.GroupHeaders, KeyExtraHeaderPrefixes: &info.ExtraHeaderPrefixes,
	} {
		v := strings.TrimSpace(data[key])
		if v == "" {
			continue
		}
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return Info{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	for key, pemData := range map[string][]byte{KeyClientCA: info.ClientCA, KeyRequestHeaderCA: info.RequestHeaderCA} {
		if len(bytes.TrimSpace(pemData)) > 0 {
			if _, err := certs.PoolFromPEM(pemData); err != nil {
				return Info{}, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return info, nil
}

// ErrNotFound is what Fetch returns (wrapped) when the front server has
// no such ConfigMap: kube-apiserver without a client CA nor a front proxy,
// or a front server that serves no ConfigMaps (an apikit aggregator).
var ErrNotFound = errors.New("configmap/" + Name + " not found in " + Namespace)

// ErrForbidden is what Fetch returns (wrapped) when the credentials may
// not read the ConfigMap.
var ErrForbidden = errors.New("forbidden: bind the Role " + Namespace + "/extension-apiserver-authentication-reader to this server's user")

// Source reads and watches the ConfigMap of a front server.
type Source struct {
	base   *url.URL
	creds  certs.Kubeconfig // its BearerToken, read for every request
	client *http.Client
	log    *slog.Logger

	mu      sync.Mutex
	info    *Info // nil until read
	version uint64
	// clientCA caches the pool ClientCA builds, per base pool and version.
	clientCA atomic.Pointer[unionPool]
	rh       atomic.Pointer[authn.RequestHeader]
}

// New returns a Source that reads the ConfigMap from the API server k
// names (its server URL, CA and credentials: the front server's
// --authentication-kubeconfig).
func New(k certs.Kubeconfig, log *slog.Logger) (*Source, error) {
	base, err := url.Parse(k.Server)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("delegation: the kubeconfig's server %q is not a URL", k.Server)
	}
	tc, err := k.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("delegation: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Source{base: base, creds: k, log: log,
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, Proxy: nil}}}
	s.rh.Store(emptyRequestHeader())
	return s, nil
}

// emptyRequestHeader trusts nobody but still strips the usual headers,
// until the ConfigMap names a front proxy.
func emptyRequestHeader() *authn.RequestHeader {
	rh, _ := authn.NewRequestHeader(authn.RequestHeaderConfig{
		CAs: authn.StaticCAs{}, UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"},
		GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	})
	return rh
}

// Info returns the ConfigMap's content as last read; ok is false until
// it was read once.
func (s *Source) Info() (Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info == nil {
		return Info{}, false
	}
	return *s.info, true
}

// apply makes info the current content.
func (s *Source) apply(info Info) {
	s.mu.Lock()
	changed := s.info == nil || !equalInfo(*s.info, info)
	if changed {
		s.info = &info
		s.version++
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	s.rh.Store(requestHeaderFor(info, s.log))
	s.log.Info("delegated authentication: read "+Namespace+"/"+Name,
		"clientCA", len(info.ClientCA) > 0, "requestHeaderCA", len(info.RequestHeaderCA) > 0, "allowedNames", info.AllowedNames)
}

func equalInfo(a, b Info) bool {
	return bytes.Equal(a.ClientCA, b.ClientCA) && bytes.Equal(a.RequestHeaderCA, b.RequestHeaderCA) &&
		slices.Equal(a.AllowedNames, b.AllowedNames) && slices.Equal(a.UsernameHeaders, b.UsernameHeaders) &&
		slices.Equal(a.UIDHeaders, b.UIDHeaders) && slices.Equal(a.GroupHeaders, b.GroupHeaders) &&
		slices.Equal(a.ExtraHeaderPrefixes, b.ExtraHeaderPrefixes)
}

// requestHeaderFor builds the front-proxy authenticator info describes;
// without a front-proxy CA (or headers) it trusts nobody.
func requestHeaderFor(info Info, log *slog.Logger) *authn.RequestHeader {
	if len(info.RequestHeaderCA) == 0 || len(info.UsernameHeaders) == 0 {
		return emptyRequestHeader()
	}
	pool, err := certs.PoolFromPEM(info.RequestHeaderCA)
	if err != nil {
		log.Warn("delegated authentication: the front proxy's CA does not parse", "err", err)
		return emptyRequestHeader()
	}
	rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{
		CAs: authn.StaticCAs{Pool: pool}, AllowedNames: info.AllowedNames,
		UsernameHeaders: info.UsernameHeaders, UIDHeaders: info.UIDHeaders,
		GroupHeaders: info.GroupHeaders, ExtraHeaderPrefixes: info.ExtraHeaderPrefixes,
	})
	if err != nil {
		log.Warn("delegated authentication: the front proxy's configuration is unusable", "err", err)
		return emptyRequestHeader()
	}
	return rh
}

// RequestHeader is the front-proxy authenticator of the ConfigMap's
// latest content (requestheader-*). Until the ConfigMap names a front
// proxy it authenticates nobody, but it always strips the X-Remote-*
// headers, so that no client can name a user in them.
func (s *Source) RequestHeader() authn.Authenticator {
	return authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		return s.rh.Load().AuthenticateRequest(r)
	})
}

// unionPool is a pool built from a base pool and a version of the
// ConfigMap's client CA.
type unionPool struct {
	base    *x509.CertPool
	version uint64
	pool    *x509.CertPool
}

// ClientCA is a CA provider that trusts base's CAs (the server's own:
// --client-ca-file, or the development PKI's; nil for none) and the
// front server's client CA (client-ca-file), as last read. The pool is
// rebuilt only when either changes, so that verified chains stay
// remembered.
func (s *Source) ClientCA(base authn.CAProvider) authn.CAProvider {
	return caFunc(func() *x509.CertPool {
		var bp *x509.CertPool
		if base != nil {
			bp = base.ClientCAs()
		}
		s.mu.Lock()
		version, info := s.version, s.info
		s.mu.Unlock()
		if u := s.clientCA.Load(); u != nil && u.base == bp && u.version == version {
			return u.pool
		}
		var pool *x509.CertPool
		switch {
		case info == nil || len(info.ClientCA) == 0:
			pool = bp
		case bp != nil:
			pool = bp.Clone()
			pool.AppendCertsFromPEM(info.ClientCA)
		default:
			pool = x509.NewCertPool()
			pool.AppendCertsFromPEM(info.ClientCA)
		}
		s.clientCA.Store(&unionPool{base: bp, version: version, pool: pool})
		return pool
	})
}

type caFunc func() *x509.CertPool

func (f caFunc) ClientCAs() *x509.CertPool { return f() }

// configMap is the part of a ConfigMap read here.
type configMap struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func (s *Source) url(path string, q url.Values) string {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Source) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token := s.creds.BearerToken(); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return s.client.Do(req)
}

// Fetch reads the ConfigMap once and applies it. It returns an error
// wrapping ErrNotFound or ErrForbidden in those cases, and the
// ConfigMap's resourceVersion otherwise.
func (s *Source) Fetch(ctx context.Context) (resourceVersion string, err error) {
	resp, err := s.get(ctx, s.url("/api/v1/namespaces/"+Namespace+"/configmaps/"+Name, nil))
	if err != nil {
		return "", fmt.Errorf("delegation: reading %s/%s: %w", Namespace, Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("delegation: reading %s/%s: %w", Namespace, Name, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", fmt.Errorf("delegation: %w", ErrNotFound)
	case http.StatusForbidden, http.StatusUnauthorized:
		return "", fmt.Errorf("delegation: reading %s/%s: %s: %w", Namespace, Name, resp.Status, ErrForbidden)
	default:
		return "", fmt.Errorf("delegation: reading %s/%s: %s: %s", Namespace, Name, resp.Status, bytes.TrimSpace(body))
	}
	var cm configMap
	if err := json.Unmarshal(body, &cm); err != nil {
		return "", fmt.Errorf("delegation: decoding %s/%s: %w", Namespace, Name, err)
	}
	info, err := Parse(cm.Data)
	if err != nil {
		return "", fmt.Errorf("delegation: %s/%s: %w", Namespace, Name, err)
	}
	s.apply(info)
	return cm.Metadata.ResourceVersion, nil
}

// Run keeps the content current until ctx ends: it watches the ConfigMap
// from resourceVersion (Fetch's; "" to read it first), applying every
// change, and reads it again when the watch ends or fails, with a growing
// backoff (up to a minute) while the front server does not answer. A
// deleted ConfigMap leaves the last content in place.
func (s *Source) Run(ctx context.Context, resourceVersion string) {
	backoff := time.Second
	rv := resourceVersion
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			rv, err = s.Fetch(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Debug("delegated authentication: reading the ConfigMap failed; retrying", "err", err, "in", backoff)
				if !sleep(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, time.Minute)
				continue
			}
			backoff = time.Second
		}
		next, err := s.watch(ctx, rv)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Debug("delegated authentication: watching the ConfigMap ended", "err", err)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, time.Minute)
		}
		rv = next
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// watchEvent is one event of a watch of ConfigMaps.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watch streams changes from rv; it returns the resourceVersion to go on
// from, "" when the ConfigMap must be read again.
func (s *Source) watch(ctx context.Context, rv string) (string, error) {
	q := url.Values{
		"watch":               {"true"},
		"fieldSelector":       {"metadata.name=" + Name},
		"resourceVersion":     {rv},
		"allowWatchBookmarks": {"true"},
		// As client-go's reflector: end the watch after 5 to 10
		// minutes, so that it never hangs on a dead connection for long.
		"timeoutSeconds": {strconv.Itoa(300 + rand.IntN(300))},
	}
	resp, err := s.get(ctx, s.url("/api/v1/namespaces/"+Namespace+"/configmaps", q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("watch: %s", resp.Status)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return rv, nil // the server ended it: go on from here
			}
			return "", err
		}
		var cm configMap
		if err := json.Unmarshal(ev.Object, &cm); err != nil {
			return "", fmt.Errorf("watch: decoding an event: %w", err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			info, err := Parse(cm.Data)
			if err != nil {
				s.log.Warn("delegated authentication: ignoring a change of the ConfigMap", "err", err)
			} else {
				s.apply(info)
			}
			rv = cm.Metadata.ResourceVersion
		case "BOOKMARK":
			rv = cm.Metadata.ResourceVersion
		case "DELETED":
			s.log.Warn("delegated authentication: the ConfigMap was deleted; keeping its last content")
			rv = cm.Metadata.ResourceVersion
		case "ERROR":
			// Most often 410 Gone: the revision was compacted.
			return "", nil
		}
	}
}
