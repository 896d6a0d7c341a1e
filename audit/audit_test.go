package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMicroTime(t *testing.T) {
	ts := time.Date(2026, 11, 30, 6, 18, 17, 253183456, time.FixedZone("CET", 3600))
	b, err := json.Marshal(MicroTime(ts))
	if err != nil || string(b) != `"2026-11-30T05:18:17.253183Z"` {
		t.Fatalf("%s %v", b, err)
	}
	var back MicroTime
	if err := json.Unmarshal(b, &back); err != nil || !time.Time(back).Equal(ts.Truncate(time.Microsecond)) {
		t.Errorf("%v %v", time.Time(back), err)
	}
}

func TestRecorder(t *testing.T) {
	ctx := context.Background()
	LogImpersonatedUser(ctx, UserInfo{Username: "nobody"}) // no recorder: nothing happens
	AddAnnotation(ctx, "k", "v")
	rec := NewRecorder(Event{AuditID: "id"})
	ctx = WithRecorder(ctx, rec)
	if RecorderFrom(ctx) != rec {
		t.Fatal("recorder lost")
	}
	LogImpersonatedUser(ctx, UserInfo{Username: "bob"})
	AddAnnotation(ctx, "authorization.k8s.io/decision", "allow")
	AddAnnotation(ctx, "authorization.k8s.io/decision", "forbid") // the first value stays
	ev := rec.Snapshot()
	ev.Annotations["x"] = "changed" // a snapshot is a copy
	if ev.ImpersonatedUser.Username != "bob" || rec.Snapshot().Annotations["authorization.k8s.io/decision"] != "allow" || rec.Snapshot().Annotations["x"] != "" {
		t.Errorf("event %+v", rec.Snapshot())
	}
}

type failingWriter struct{ fail bool }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestLogSink(t *testing.T) {
	var buf bytes.Buffer
	s := NewLogSink(&buf, FormatJSON)
	s.Log(&Event{Kind: "Event", AuditID: "a"})
	s.Log(&Event{Kind: "Event", AuditID: "b"})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"auditID":"b"`) {
		t.Errorf("%q", buf.String())
	}
	fw := &failingWriter{fail: true}
	s = NewLogSink(fw, "")
	s.Log(&Event{}) // logged once, no panic
	s.Log(&Event{})
	fw.fail = false
	s.Log(&Event{})
	if s.failed {
		t.Error("the sink did not recover")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := OpenLogFile(t.TempDir(), LogFileOptions{}); err == nil {
		t.Error("a directory opened as the audit log")
	}
}
