package options

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server/filters"
)

func parseAuditFlags(t *testing.T, args ...string) *AuditOptions {
	t.Helper()
	o := NewAuditOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return o
}

func TestAuditLogFlags(t *testing.T) {
	dir := t.TempDir()
	logPath := "--audit-log-path=" + filepath.Join(dir, "audit.log")
	for _, tc := range []struct {
		name string
		args []string
		want []string // Validate's messages
	}{
		{name: "kube-apiserver's defaults", args: []string{logPath}},
		{name: "rotation and legacy", args: []string{logPath, "--audit-log-maxsize=10", "--audit-log-maxbackup=3", "--audit-log-maxage=7", "--audit-log-compress", "--audit-log-format=legacy"}},
		{name: "negative numbers", args: []string{logPath, "--audit-log-maxsize=-1", "--audit-log-maxbackup=-2", "--audit-log-maxage=-3"},
			want: []string{"--audit-log-maxage -3 can't be a negative number", "--audit-log-maxbackup -2 can't be a negative number", "--audit-log-maxsize -1 can't be a negative number"}},
		{name: "an unknown format", args: []string{logPath, "--audit-log-format=xml"},
			want: []string{`invalid audit log format xml, allowed formats are "json,legacy"`}},
		{name: "an unknown mode", args: []string{logPath, "--audit-log-mode=async"},
			want: []string{`invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict"`}},
		{name: "batch without a buffer", args: []string{logPath, "--audit-log-mode=batch", "--audit-log-batch-buffer-size=0"},
			want: []string{"invalid audit batch log buffer size 0, must be a positive number"}},
		{name: "batch settings unused in blocking mode", args: []string{logPath, "--audit-log-batch-buffer-size=0"}},
		{name: "truncation", args: []string{logPath, "--audit-log-truncate-enabled", "--audit-log-truncate-max-event-size=10", "--audit-log-truncate-max-batch-size=5"},
			want: []string{"invalid audit truncate log max batch size 5, must be greater than max event size (10)"}},
		{name: "no log, nothing checked", args: []string{"--audit-log-maxsize=-1", "--audit-log-format=xml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range parseAuditFlags(t, tc.args...).Validate() {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
	if o := NewAuditOptions(); o.LogFile != (audit.LogFileOptions{Format: audit.FormatJSON}) {
		t.Errorf("defaults %+v, want JSON, no size (lumberjack's 100 MB), every backup kept", o.LogFile)
	}
}

// TestAuditLogFlagsRotate shows the flags reach the file: a log past
// --audit-log-maxsize is rotated, and --audit-log-maxbackup old files kept.
func TestAuditLogFlagsRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	o := parseAuditFlags(t, "--audit-log-path="+path, "--audit-log-maxsize=1", "--audit-log-maxbackup=1", "--audit-log-format=legacy")
	if errs := o.Validate(); errs != nil {
		t.Fatal(errs)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("u", 64<<10)
	for i := range 40 { // 2.5 MB: two rotations
		o.Sink.Log(&audit.Event{AuditID: "id", Stage: audit.StageRequestReceived, RequestURI: "/" + long})
		if i%16 == 15 {
			time.Sleep(20 * time.Millisecond) // rotations in distinct milliseconds
		}
	}
	if err := o.Sink.Close(); err != nil {
		t.Fatal(err)
	}
	var backups []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		backups, _ = filepath.Glob(filepath.Join(dir, "audit-*.log"))
		if len(backups) <= 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	data, err := os.ReadFile(backups[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), ` AUDIT: id="id" stage="RequestReceived"`) {
		t.Errorf("the backup is not in the legacy format: %.200s", data)
	}
}

func TestAuditLogMode(t *testing.T) {
	for mode, check := range map[string]func(audit.Sink) bool{
		"blocking":        func(s audit.Sink) bool { _, ok := s.(*audit.LogSink); return ok },
		"blocking-strict": func(s audit.Sink) bool { _, ok := s.(audit.StrictSink); return ok },
		"batch":           func(s audit.Sink) bool { _, ok := s.(*audit.BatchSink); return ok },
	} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			o := parseAuditFlags(t, "--audit-log-path="+path, "--audit-log-mode="+mode)
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			if !check(o.Backend) {
				t.Errorf("backend %T", o.Backend)
			}
			o.Backend.Log(&audit.Event{AuditID: "written"})
			closeAll(o.closers) // a batch is written out first
			if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"auditID":"written"`) {
				t.Errorf("the log holds %q", data)
			}
		})
	}
}

// TestAuditWebhookFlags wires --audit-webhook-config-file to a real TLS
// webhook on loopback: in batch mode (the default) requests finish while
// the webhook hangs, and the events reach it once it answers; in
// blocking-strict mode a webhook that refuses the event refuses the request.
func TestAuditWebhookFlags(t *testing.T) {
	var mu sync.Mutex
	var items []string
	release := make(chan struct{})
	refuse := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		no := refuse
		mu.Unlock()
		if no {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		<-release
		var l struct {
			Kind  string
			Items []audit.Event
		}
		if err := json.NewDecoder(r.Body).Decode(&l); err != nil || l.Kind != "EventList" {
			t.Errorf("a post that is not an EventList: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range l.Items {
			items = append(items, ev.Stage)
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := (certs.Kubeconfig{Server: srv.URL, CAPEM: ca}).WriteFile(kubeconfig); err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	request := func(sink audit.Sink) int {
		r := httptest.NewRequest("GET", "/apis", nil)
		r = r.WithContext(authn.WithUser(r.Context(), &authn.User{Name: "alice"}))
		rec := httptest.NewRecorder()
		filters.WithAudit(handler, sink, nil, nil).ServeHTTP(rec, r)
		return rec.Code
	}

	o := parseAuditFlags(t, "--audit-webhook-config-file="+kubeconfig, "--audit-webhook-batch-max-wait=10ms")
	if errs := o.Validate(); errs != nil {
		t.Fatal(errs)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			start := time.Now()
			if code := request(o.Backend); code != 200 {
				t.Errorf("code %d", code)
			}
			slowest = max(slowest, time.Since(start))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("requests waited for the hanging audit webhook")
	}
	t.Logf("slowest of 20 requests with the audit webhook hanging: %v", slowest)
	close(release)
	closeAll(o.closers)
	mu.Lock()
	got := len(items)
	mu.Unlock()
	if got != 40 { // RequestReceived and ResponseComplete of each
		t.Errorf("the webhook got %d events, want 40", got)
	}

	mu.Lock()
	refuse = true
	mu.Unlock()
	o = parseAuditFlags(t, "--audit-webhook-config-file="+kubeconfig, "--audit-webhook-mode=blocking-strict")
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	defer closeAll(o.closers)
	restore := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer slog.SetDefault(restore)
	if code := request(o.Backend); code != 500 {
		t.Errorf("blocking-strict with a refusing webhook: %d, want 500", code)
	}
}

func TestAuditLogTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	o := parseAuditFlags(t, "--audit-log-path="+path, "--audit-log-truncate-enabled", "--audit-log-truncate-max-event-size=1000")
	if errs := o.Validate(); errs != nil {
		t.Fatal(errs)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	o.Backend.Log(&audit.Event{AuditID: "big", Level: audit.LevelRequest, RequestObject: []byte(`"` + strings.Repeat("x", 2000) + `"`)})
	closeAll(o.closers)
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"auditID":"big"`) || !strings.Contains(string(data), `"audit.k8s.io/truncated":"true"`) || strings.Contains(string(data), "xxx") {
		t.Errorf("the log holds %.300s", data)
	}
}
