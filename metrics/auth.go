package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of authentication_attempts and authentication_duration_seconds,
// as kube-apiserver labels them.
const (
	AuthnSuccess = "success"
	AuthnFailure = "failure"
	AuthnError   = "error"
)

// Results of authorization_attempts_total and
// authorization_duration_seconds, as kube-apiserver labels them.
const (
	AuthzAllowed   = "allowed"
	AuthzDenied    = "denied"
	AuthzNoOpinion = "no-opinion"
	AuthzError     = "error"
)

// authBuckets are kube-apiserver's for both duration histograms: 1ms
// doubling to about 16s.
var authBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

type authMetrics struct {
	users        *prometheus.CounterVec
	authnResults map[string]prometheus.Counter
	authnLatency map[string]prometheus.Observer
	authzResults map[string]prometheus.Counter
	authzLatency map[string]prometheus.Observer
	decisions    *prometheus.CounterVec
}

func newAuthMetrics(reg prometheus.Registerer) authMetrics {
	users := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authenticated_user_requests",
		Help: "Counter of authenticated requests broken out by username.",
	}, []string{"username"})
	authnAttempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authentication_attempts",
		Help: "Counter of authenticated attempts.",
	}, []string{"result"})
	authnDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "authentication_duration_seconds",
		Help:    "Authentication duration in seconds broken out by result.",
		Buckets: authBuckets,
	}, []string{"result"})
	authzAttempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "authorization_attempts_total",
		Help: "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
	}, []string{"result"})
	authzDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "authorization_duration_seconds",
		Help:    "Authorization duration in seconds broken out by result.",
		Buckets: authBuckets,
	}, []string{"result"})
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_authorization_decisions_total",
		Help: "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.",
	}, []string{"type", "name", "decision"})
	reg.MustRegister(users, authnAttempts, authnDuration, authzAttempts, authzDuration, decisions)
	// The results are a fixed set: resolve their series once, so that a
	// request pays no label lookup.
	a := authMetrics{users: users, decisions: decisions,
		authnResults: map[string]prometheus.Counter{}, authnLatency: map[string]prometheus.Observer{},
		authzResults: map[string]prometheus.Counter{}, authzLatency: map[string]prometheus.Observer{}}
	for _, r := range []string{AuthnSuccess, AuthnFailure, AuthnError} {
		a.authnResults[r] = authnAttempts.WithLabelValues(r)
		a.authnLatency[r] = authnDuration.WithLabelValues(r)
	}
	for _, r := range []string{AuthzAllowed, AuthzDenied, AuthzNoOpinion, AuthzError} {
		a.authzResults[r] = authzAttempts.WithLabelValues(r)
		a.authzLatency[r] = authzDuration.WithLabelValues(r)
	}
	return a
}

// ObserveAuthentication counts one authentication attempt with its result
// (AuthnSuccess, AuthnFailure or AuthnError) and duration; a success
// counts the user too, under kube-apiserver's compressed username.
func (m *Registry) ObserveAuthentication(result, username string, elapsed time.Duration) {
	if m == nil {
		return
	}
	c, ok := m.auth.authnResults[result]
	if !ok {
		return
	}
	c.Inc()
	m.auth.authnLatency[result].Observe(elapsed.Seconds())
	if result == AuthnSuccess {
		m.auth.users.WithLabelValues(CompressUsername(username)).Inc()
	}
}

// ObserveAuthorization counts one authorization decision with its result
// (AuthzAllowed, AuthzDenied, AuthzNoOpinion or AuthzError) and duration.
func (m *Registry) ObserveAuthorization(result string, elapsed time.Duration) {
	if m == nil {
		return
	}
	c, ok := m.auth.authzResults[result]
	if !ok {
		return
	}
	c.Inc()
	m.auth.authzLatency[result].Observe(elapsed.Seconds())
}

// ObserveAuthorizationDecision counts a terminal decision (AuthzAllowed or
// AuthzDenied) of one authorizer of the chain, named by its type ("RBAC",
// "Webhook", "AlwaysAllow"...) and its name, as kube-apiserver's
// apiserver_authorization_decisions_total. Types and names come from the
// server's configuration, so the series are bounded.
func (m *Registry) ObserveAuthorizationDecision(typ, name, decision string) {
	if m == nil || (decision != AuthzAllowed && decision != AuthzDenied) {
		return
	}
	m.auth.decisions.WithLabelValues(typ, name, decision).Inc()
}

// CompressUsername maps a username onto the few values
// authenticated_user_requests has, as kube-apiserver does: a handful of
// well-known identities as they are, "email_id" for what looks like an
// address, "other" for everyone else. The label stays bounded and no
// user's name is published.
func CompressUsername(username string) string {
	switch {
	case username == "admin" || username == "client" || username == "kube_proxy" ||
		username == "kubelet" || username == "system:serviceaccount:kube-system:default":
		return username
	case strings.Contains(username, "@"):
		return "email_id"
	}
	return "other"
}
