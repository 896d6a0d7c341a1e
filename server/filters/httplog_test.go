package filters

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/request"
)

func TestWithHTTPLogging(t *testing.T) {
	tests := []struct {
		name    string
		level   slog.Level
		handler http.HandlerFunc
		want    map[string]any // nil: no line
	}{
		{
			name:  "below -v=3 nothing is logged",
			level: slog.LevelInfo,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
			},
		},
		{
			name:  "status and added values",
			level: LevelHTTP,
			handler: func(w http.ResponseWriter, r *http.Request) {
				request.AddLogValues(r.Context(), "user", "alice", "apf_pl", "workload-low")
				w.WriteHeader(http.StatusCreated)
			},
			want: map[string]any{"msg": "HTTP", "verb": "POST", "resp": 201.0, "user": "alice", "apf_pl": "workload-low", "resource": "flunders.wardle.example.com"},
		},
		{
			name:    "a body without a status is 200",
			level:   LevelHTTP,
			handler: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) },
			want:    map[string]any{"resp": 200.0},
		},
		{
			name:    "a panic is logged as 500",
			level:   LevelHTTP,
			handler: func(w http.ResponseWriter, r *http.Request) { panic("boom") },
			want:    map[string]any{"resp": 500.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tt.level}))
			h := WithHTTPLogging(tt.handler, logger)
			r := httptest.NewRequest("POST", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders", nil)
			r = r.WithContext(request.WithInfo(r.Context(), &request.Info{IsResourceRequest: true, Verb: "create",
				APIGroup: "wardle.example.com", APIVersion: "v1beta1", Namespace: "ns", Resource: "flunders"}))
			func() {
				defer func() { _ = recover() }()
				h.ServeHTTP(httptest.NewRecorder(), r)
			}()
			if tt.want == nil {
				if buf.Len() != 0 {
					t.Fatalf("logged %q", buf.String())
				}
				return
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%q: %v", buf.String(), err)
			}
			for k, v := range tt.want {
				if line[k] != v {
					t.Errorf("%s = %v, want %v: %v", k, line[k], v, line)
				}
			}
		})
	}
}

func TestAddLogValuesWithoutCollectorIsANoop(t *testing.T) {
	request.AddLogValues(t.Context(), "user", "nobody") // must not panic
}
