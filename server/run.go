package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/respond"
)

func encodeJSON(v any) ([]byte, error) { return registry.EncodeJSON(v) }

// runtimeState is what a running server tracks for its health checks.
type runtimeState struct {
	shuttingDown atomic.Bool
	mu           sync.Mutex
	hooksDone    map[string]bool
	hookErrs     map[string]error
}

// installDefaultRoutes adds discovery, /version and the health endpoints.
func (s *GenericServer) installDefaultRoutes() {
	// /api lists the core group when a server of the chain serves it; a
	// chain without one answers 404, as k8s.io/sample-apiserver does
	// (client-go's discovery takes that as "no legacy resources").
	s.mux.HandleFunc("/api", s.serveAPI)
	s.mux.HandleFunc("/apis", s.serveAPIs)
	s.mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, http.StatusOK, s.config.Version)
	})
	for _, ep := range []string{"healthz", "livez", "readyz"} {
		h := serveHealth(ep, func() []HealthCheck { return s.checksFor(ep) }, s.config.Metrics, s.config.Logger.With("server", s.name))
		s.mux.HandleFunc("/"+ep, h)
		s.mux.HandleFunc("/"+ep+"/", h)
	}
	if s.config.Metrics != nil {
		s.mux.Handle("/metrics", s.config.Metrics.Handler())
		s.mux.Handle("/metrics/slis", s.config.Metrics.SLIHandler())
	}
	if s.config.EnableProfiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, http.StatusOK, map[string][]string{"paths": s.ListedPaths()})
	})
}

// ListedPaths are the paths GET / lists.
func (s *GenericServer) ListedPaths() []string {
	paths := []string{"/apis", "/healthz", "/livez", "/readyz", "/version", "/openapi/v2", "/openapi/v3"}
	if s.config.Metrics != nil {
		// kube-apiserver lists its /metrics and /metrics/slis too.
		paths = append(paths, "/metrics", "/metrics/slis")
	}
	for _, g := range s.APIGroups() {
		if g.Name == "" {
			paths = append(paths, "/api")
		} else {
			paths = append(paths, "/apis/"+g.Name)
		}
		for _, v := range g.Versions {
			paths = append(paths, GroupVersionPath(meta.GroupVersion{Group: g.Name, Version: v.Version}))
		}
	}
	sort.Strings(paths)
	return paths
}

// checksFor returns the checks of one health endpoint, the chain's and the
// running server's own (post-start hooks, shutdown).
func (s *GenericServer) checksFor(endpoint string) []HealthCheck {
	all := s.HealthChecks()
	var checks []HealthCheck
	switch endpoint {
	case "healthz":
		checks = all.Healthz
	case "livez":
		checks = all.Livez
	default:
		checks = all.Readyz
	}
	s.mu.Lock()
	rt := s.runtime
	names := make([]string, 0, len(s.postStartHooks))
	for n := range s.postStartHooks {
		names = append(names, n)
	}
	s.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		checks = append(checks, HealthCheck{Name: "poststarthook/" + n, Check: func(*http.Request) error {
			if rt == nil {
				return errors.New("not started")
			}
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if err := rt.hookErrs[n]; err != nil {
				return err
			}
			if !rt.hooksDone[n] {
				return errors.New("not finished")
			}
			return nil
		}})
	}
	if endpoint == "readyz" {
		checks = append(checks, HealthCheck{Name: "shutdown", Check: func(*http.Request) error {
			if rt != nil && rt.shuttingDown.Load() {
				return errors.New("process is shutting down")
			}
			return nil
		}})
	}
	return checks
}

// PreparedServer is a server ready to run.
type PreparedServer struct {
	s *GenericServer
}

// PrepareRun finishes the server's routes (OpenAPI needs every group to be
// installed) and returns it ready to run.
func (s *GenericServer) PrepareRun() PreparedServer {
	s.installOpenAPI()
	return PreparedServer{s}
}

// Run serves until ctx ends, then shuts down gracefully: /readyz fails,
// pre-shutdown hooks run, after ShutdownDelayDuration watches end and
// in-flight requests drain (at most ShutdownTimeout). It returns nil after a
// clean shutdown.
func (p PreparedServer) Run(ctx context.Context) error {
	s := p.s
	c := s.config
	log := c.Logger.With("server", s.name)
	ln := c.SecureServing.Listener
	if ln == nil {
		addr := net.JoinHostPort(c.SecureServing.BindAddress, strconv.Itoa(c.SecureServing.Port))
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("server: listening on %s: %w", addr, err)
		}
	}
	tlsConfig := &tls.Config{
		MinVersion:   c.SecureServing.MinTLSVersion,
		CipherSuites: c.SecureServing.CipherSuites,
		// Client certificates are verified by the authenticator, against
		// a CA pool that may be reloaded, not by the handshake.
		ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"h2", "http/1.1"},
	}
	if c.SecureServing.GetCertificate != nil {
		// crypto/tls asks GetCertificate only when Certificates is empty
		// or the client sent a server name: IP clients send none.
		tlsConfig.GetCertificate = c.SecureServing.GetCertificate
	} else {
		tlsConfig.Certificates = []tls.Certificate{*c.SecureServing.Certificate}
	}
	srv := &http.Server{
		Handler:           s.Handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	if err := http2.ConfigureServer(srv, &http2.Server{
		MaxConcurrentStreams: c.SecureServing.HTTP2MaxStreamsPerConnection,
		// kube-apiserver's values: large enough for big bodies, bounded
		// per stream so one client cannot pin memory.
		MaxUploadBufferPerStream:     256 << 10,
		MaxUploadBufferPerConnection: 256 << 10 * 32,
	}); err != nil {
		return fmt.Errorf("server: configuring HTTP/2: %w", err)
	}
	tlsLn := tls.NewListener(ln, tlsConfig)

	rt := &runtimeState{hooksDone: map[string]bool{}, hookErrs: map[string]error{}}
	s.mu.Lock()
	s.runtime = rt
	hooks := copyMap(s.postStartHooks)
	preShutdown := copyMap(s.preShutdownHooks)
	s.mu.Unlock()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(tlsLn) }()
	log.Info("serving securely", "address", ln.Addr().String())

	hookCtx, stopHooks := context.WithCancel(context.Background())
	var hookWG sync.WaitGroup
	for name, hook := range hooks {
		hookWG.Add(1)
		go func() {
			defer hookWG.Done()
			hookStart := time.Now()
			err := hook(hookCtx)
			log.Debug("post-start hook finished", "hook", name, "took", time.Since(hookStart))
			rt.mu.Lock()
			rt.hooksDone[name] = true
			if err != nil {
				rt.hookErrs[name] = err
			}
			rt.mu.Unlock()
			if err != nil {
				log.Error("post-start hook failed", "hook", name, "err", err)
			}
		}()
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("server: serving: %w", err)
	}

	log.Info("shutting down")
	rt.shuttingDown.Store(true)
	for name, hook := range preShutdown {
		if err := hook(); err != nil {
			log.Error("pre-shutdown hook failed", "hook", name, "err", err)
		}
	}
	if runErr == nil && c.ShutdownDelayDuration > 0 {
		time.Sleep(c.ShutdownDelayDuration)
	}
	// Watches end cleanly in every server of the chain, so that clients
	// reconnect (to another replica) instead of being cut at drain time.
	for d := DelegationTarget(s); d != nil; d = d.NextDelegate() {
		if gs, ok := d.(*GenericServer); ok {
			gs.stopOnce.Do(func() { close(gs.stopWatches) })
		}
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("server: draining requests: %w", err)
	}
	stopHooks()
	hookWG.Wait()
	if runErr == nil {
		log.Info("shut down cleanly")
	}
	return runErr
}
