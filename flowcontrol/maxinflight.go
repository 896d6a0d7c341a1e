package flowcontrol

import (
	"net/http"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
)

// MaxInFlight is kube-apiserver's policy without priority and fairness:
// at most a fixed number of read-only and of mutating requests run at
// once; the next one is refused at once (429, Retry-After: 1). Watches and
// members of system:masters are never limited.
type MaxInFlight struct {
	readOnly, mutating chan struct{} // nil: no limit
}

// NewMaxInFlight returns the policy for the two limits
// (--max-requests-inflight, --max-mutating-requests-inflight); zero means
// no limit for that kind.
func NewMaxInFlight(readOnly, mutating int) *MaxInFlight {
	m := &MaxInFlight{}
	if readOnly > 0 {
		m.readOnly = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		m.mutating = make(chan struct{}, mutating)
	}
	return m
}

func noop() {}

// Admit implements Interface.
func (m *MaxInFlight) Admit(_ http.ResponseWriter, r *http.Request) (func(), error) {
	info, ok := request.InfoFrom(r.Context())
	if !ok || info.Verb == "watch" {
		return noop, nil
	}
	c := m.readOnly
	if info.IsMutating() {
		c = m.mutating
	}
	if c == nil {
		return noop, nil
	}
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	default:
	}
	// The superuser and loopback clients always get an answer.
	if u, ok := authn.UserFrom(r.Context()); ok && u.InGroup(authn.SystemPrivilegedGroup) {
		return noop, nil
	}
	return nil, meta.NewTooManyRequests(tooManyRequestsMessage, 1)
}

// InFlight returns the read-only and mutating requests running now.
func (m *MaxInFlight) InFlight() (readOnly, mutating int) {
	return len(m.readOnly), len(m.mutating)
}
