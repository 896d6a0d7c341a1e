package flowcontrol

import "net/http"

// Interface is a flow-control policy: the server's flow-control filter,
// which runs after authentication and before authorization, asks it about
// every request. MaxInFlight and APF implement it; a program may put its
// own in server.Config.FlowControl.
type Interface interface {
	// Admit decides whether and when r runs. It blocks while r waits and
	// then returns done, which the filter calls exactly once, when r no
	// longer needs its share: after it has been served or, for a watch,
	// once its initial events are sent (see request.SignalWatchInit). Or
	// it returns an error the filter answers with instead of serving r:
	// a *meta.StatusError, 429 TooManyRequests with RetryAfterSeconds
	// when the server is overloaded. Admit may set response headers.
	//
	// Long-running requests other than watches (proxy, exec) never reach
	// Admit.
	Admit(w http.ResponseWriter, r *http.Request) (done func(), err error)
}

// tooManyRequestsMessage is what kube-apiserver tells a refused client.
const tooManyRequestsMessage = "Too many requests, please try again later."
