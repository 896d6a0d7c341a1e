package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLogFileRotation writes events past --audit-log-maxsize and sees the
// file rotated into timestamped backups, no more of them kept than
// --audit-log-maxbackup, every file within the size and every line whole.
func TestLogFileRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	const maxSize, maxBackups = 1, 2 // megabytes, files
	sink, err := OpenLogFile(path, LogFileOptions{MaxSize: maxSize, MaxBackups: maxBackups})
	if err != nil {
		t.Fatal(err)
	}
	// 100 KB events: a rotation every ten; five rotations. The pause keeps
	// rotations in distinct milliseconds, the resolution of backup names.
	big := strings.Repeat("x", 100<<10)
	for i := range 55 {
		sink.Log(&Event{Kind: "Event", AuditID: "id", Annotations: map[string]string{"n": big}})
		if i%10 == 9 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// Old backups are removed by lumberjack's own goroutine: wait for it.
	var backups []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		backups, _ = filepath.Glob(filepath.Join(dir, "audit-*.log"))
		if len(backups) <= maxBackups || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(backups) != maxBackups {
		t.Fatalf("backups %v, want %d", backups, maxBackups)
	}
	for _, f := range append(backups, path) {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > maxSize<<20 || info.Size() == 0 {
			t.Errorf("%s: %d bytes, want 1 to %d", f, info.Size(), maxSize<<20)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o, want 600", f, info.Mode().Perm())
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Annotations["n"] != big {
				t.Fatalf("%s: a line that is not a whole event: %v", f, err)
			}
		}
	}
}

func TestLegacyFormat(t *testing.T) {
	received := MicroTime(time.Date(2026, 12, 1, 14, 40, 5, 123456000, time.UTC))
	for _, tc := range []struct {
		name string
		ev   Event
		want string
	}{
		{name: "a request", ev: Event{
			AuditID: "a1", Stage: StageResponseComplete, Verb: "create", RequestURI: "/api/v1/namespaces/ns/pods",
			User:             UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}},
			ImpersonatedUser: &UserInfo{Username: "frank", Groups: []string{"dev"}},
			SourceIPs:        []string{"10.0.0.1", "127.0.0.1"}, UserAgent: "kubectl/v1.37",
			ObjectRef:                &ObjectReference{Resource: "pods", Namespace: "ns"},
			ResponseStatus:           &ResponseStatus{Code: 201},
			RequestReceivedTimestamp: received,
		}, want: `2026-12-01T14:40:05.123456Z AUDIT: id="a1" stage="ResponseComplete" ip="10.0.0.1" method="create" user="admin" ` +
			`groups="\"system:masters\",\"system:authenticated\"" as="frank" asgroups="\"dev\"" user-agent="kubectl/v1.37" namespace="ns" ` +
			`uri="/api/v1/namespaces/ns/pods" response="201"`},
		{name: "what an event lacks", ev: Event{AuditID: "a2", Stage: StageRequestReceived, Verb: "get", RequestURI: "/version", RequestReceivedTimestamp: received},
			want: `2026-12-01T14:40:05.123456Z AUDIT: id="a2" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" ` +
				`as="<self>" asgroups="<lookup>" user-agent="" namespace="<none>" uri="/version" response="<deferred>"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			NewLogSink(&buf, FormatLegacy).Log(&tc.ev)
			if got := buf.String(); got != tc.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
