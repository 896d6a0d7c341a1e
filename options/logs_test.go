package options

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLogsFormatAndVerbosity(t *testing.T) {
	tests := []struct {
		name      string
		o         LogsOptions
		log       func(*slog.Logger)
		want      []map[string]any // keys that must be present, with values; nil value = any
		wantLines int
	}{
		{
			name: "json info has ts and v 0",
			o:    LogsOptions{Format: "json", Level: "info"},
			log:  func(l *slog.Logger) { l.Info("serving", "port", 6443) },
			want: []map[string]any{{"msg": "serving", "v": 0.0, "port": 6443.0, "ts": nil}},
		},
		{
			name: "json error has no v",
			o:    LogsOptions{Format: "json", Level: "info"},
			log:  func(l *slog.Logger) { l.Error("broken", "err", "etcd down") },
			want: []map[string]any{{"msg": "broken", "err": "etcd down"}},
		},
		{
			name:      "-v=0 hides verbosity 3",
			o:         LogsOptions{Format: "json", Level: "info"},
			log:       func(l *slog.Logger) { l.Log(t.Context(), slog.Level(-3), "HTTP") },
			wantLines: 0,
		},
		{
			name: "-v=3 shows verbosity 3 as v 3",
			o:    LogsOptions{Format: "json", Level: "info", Verbosity: 3},
			log:  func(l *slog.Logger) { l.Log(t.Context(), slog.Level(-3), "HTTP") },
			want: []map[string]any{{"msg": "HTTP", "v": 3.0}},
		},
		{
			name:      "-v=3 hides debug (4)",
			o:         LogsOptions{Format: "json", Level: "info", Verbosity: 3},
			log:       func(l *slog.Logger) { l.Debug("detail") },
			wantLines: 0,
		},
		{
			name: "--log-level=debug still works",
			o:    LogsOptions{Format: "json", Level: "debug"},
			log:  func(l *slog.Logger) { l.Debug("detail") },
			want: []map[string]any{{"msg": "detail", "v": 4.0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := tt.o.NewLogger(&buf)
			if err != nil {
				t.Fatal(err)
			}
			tt.log(l)
			var lines []map[string]any
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("not JSON: %q: %v", sc.Text(), err)
				}
				lines = append(lines, m)
			}
			if tt.want == nil && len(lines) != tt.wantLines {
				t.Fatalf("%d lines, want %d: %v", len(lines), tt.wantLines, lines)
			}
			if tt.want != nil && len(lines) != len(tt.want) {
				t.Fatalf("%d lines, want %d: %v", len(lines), len(tt.want), lines)
			}
			for i, w := range tt.want {
				for k, v := range w {
					got, ok := lines[i][k]
					if !ok || (v != nil && got != v) {
						t.Errorf("line %d: %s = %v (present %v), want %v: %v", i, k, got, ok, v, lines[i])
					}
				}
				if _, ok := lines[i]["time"]; ok {
					t.Errorf("line %d has slog's time key: %v", i, lines[i])
				}
				if ts, ok := lines[i]["ts"].(float64); ok && time.Since(time.Unix(int64(ts), 0)) > time.Minute {
					t.Errorf("ts %v is not seconds since the epoch", ts)
				}
			}
			if strings.Contains(tt.name, "error") {
				if _, ok := lines[0]["v"]; ok {
					t.Errorf("an error carries v: %v", lines[0])
				}
			}
		})
	}
}

func TestLogsValidate(t *testing.T) {
	for _, tt := range []struct {
		o    LogsOptions
		want string
	}{
		{LogsOptions{Format: "yaml", Level: "info"}, `--logging-format "yaml" is not one of "json", "text"`},
		{LogsOptions{Format: "text", Level: "info", Verbosity: -1}, "-v -1 must be at least 0"},
		{LogsOptions{Format: "text", Level: "loud"}, `--log-level "loud"`},
	} {
		errs := tt.o.Validate()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, errs, tt.want)
		}
	}
}

// TestCommandLogsOneLinePerRequest runs the command at -v=3 with JSON logs:
// every request gets kube's "HTTP" line with the verb, resource, user,
// priority level and status, and nothing a client sent as a credential.
func TestCommandLogsOneLinePerRequest(t *testing.T) {
	r := runCommand(t, "--storage-backend=memory", "-v=3", "--logging-format=json")
	if code, body := r.do("GET", "/apis/test.example.com/v1/widgets", ""); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, _ := r.do("GET", "/apis/test.example.com/v1/widgets/nope", ""); code != 404 {
		t.Fatalf("get: %d", code)
	}
	// A credential in a header never reaches the log, whatever the answer.
	withToken, _ := http.NewRequest("GET", r.base+"/apis/test.example.com/v1/widgets?watch=false", nil)
	withToken.Header.Set("Authorization", "Bearer s3cr3t-t0ken")
	if resp, err := r.client.Do(withToken); err == nil {
		resp.Body.Close()
	}
	var list, get map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for (list == nil || get == nil) && time.Now().Before(deadline) {
		for _, line := range strings.Split(r.stderr.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "HTTP" {
				continue
			}
			switch m["URI"] {
			case "/apis/test.example.com/v1/widgets":
				list = m
			case "/apis/test.example.com/v1/widgets/nope":
				get = m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if list == nil || get == nil {
		t.Fatalf("no HTTP lines for the list and the get:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr.String(), "s3cr3t") {
		t.Errorf("a bearer token reached the log:\n%s", r.stderr)
	}
	for _, c := range []struct {
		line map[string]any
		want map[string]any
	}{
		{list, map[string]any{"verb": "LIST", "resource": "widgets.test.example.com", "resp": 200.0, "user": "admin", "v": 3.0}},
		{get, map[string]any{"verb": "GET", "resp": 404.0, "user": "admin"}},
	} {
		for k, v := range c.want {
			if c.line[k] != v {
				t.Errorf("%s = %v, want %v: %v", k, c.line[k], v, c.line)
			}
		}
		for _, k := range []string{"latency", "userAgent", "audit-ID", "srcIP", "apf_pl", "apf_fs"} {
			if _, ok := c.line[k]; !ok {
				t.Errorf("no %s: %v", k, c.line)
			}
		}
	}
}
