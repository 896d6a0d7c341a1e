package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

type recordSink struct{ evs []*Event }

func (r *recordSink) Log(ev *Event) { r.evs = append(r.evs, ev) }

func TestTruncateSink(t *testing.T) {
	restore := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer slog.SetDefault(restore)
	big := json.RawMessage(`{"data":"` + strings.Repeat("x", 2000) + `"}`)
	small := json.RawMessage(`{"a":1}`)
	for _, tc := range []struct {
		name          string
		ev            Event
		want          string // "" dropped, "same", "truncated"
		wantAnnotated bool
	}{
		{name: "small enough", ev: Event{Level: LevelRequestResponse, RequestObject: small, ResponseObject: small}, want: "same"},
		{name: "objects left out", ev: Event{Level: LevelRequestResponse, RequestObject: big, ResponseObject: small, Annotations: map[string]string{"k": "v"}}, want: "truncated"},
		{name: "Request level", ev: Event{Level: LevelRequest, RequestObject: big}, want: "truncated"},
		{name: "Metadata too large, dropped", ev: Event{Level: LevelMetadata, Annotations: map[string]string{"k": string(big)}}},
		{name: "still too large, dropped", ev: Event{Level: LevelRequest, RequestObject: big, Annotations: map[string]string{"k": string(big)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := &recordSink{}
			ts := NewTruncateSink(next, TruncateConfig{MaxEventSize: 1000, MaxBatchSize: 1000})
			ev := tc.ev
			ts.Log(&ev)
			if tc.want == "" {
				if len(next.evs) != 0 {
					t.Errorf("passed on %+v", next.evs[0])
				}
				return
			}
			if len(next.evs) != 1 {
				t.Fatalf("%d events passed on", len(next.evs))
			}
			got := next.evs[0]
			truncated := got.Annotations[TruncatedAnnotation] == "true"
			if tc.want == "same" && (truncated || !bytes.Equal(got.RequestObject, ev.RequestObject)) ||
				tc.want == "truncated" && (!truncated || got.RequestObject != nil || got.ResponseObject != nil) {
				t.Errorf("got %+v, want %s", got, tc.want)
			}
			if tc.want == "truncated" && (ev.RequestObject == nil || ev.Annotations[TruncatedAnnotation] != "") {
				t.Error("the caller's event was changed")
			}
		})
	}

	t.Run("strict behind", func(t *testing.T) {
		var buf bytes.Buffer
		ts := NewTruncateSink(Strict(NewLogSink(&buf, FormatJSON)), TruncateConfig{MaxEventSize: 1000, MaxBatchSize: 1000})
		if err := ts.Store(&Event{Level: LevelMetadata, Annotations: map[string]string{"k": string(big)}}); !errors.Is(err, errTooLarge) {
			t.Errorf("a dropped event: %v", err)
		}
		if err := ts.Store(&Event{Level: LevelRequest, RequestObject: big}); err != nil || !strings.Contains(buf.String(), `"audit.k8s.io/truncated":"true"`) {
			t.Errorf("%v; %s", err, buf.String())
		}
		// Not strict behind: nothing fails.
		if err := NewTruncateSink(&recordSink{}, TruncateConfig{MaxEventSize: 10, MaxBatchSize: 10}).Store(&Event{}); err != nil {
			t.Errorf("non-strict: %v", err)
		}
	})
}

func TestValidateTruncate(t *testing.T) {
	for _, tc := range []struct {
		cfg  TruncateConfig
		want string
	}{
		{TruncateConfig{MaxEventSize: 100 << 10, MaxBatchSize: 10 << 20}, ""},
		{TruncateConfig{MaxEventSize: 0, MaxBatchSize: 10}, "invalid audit truncate log max event size 0, must be a positive number"},
		{TruncateConfig{MaxEventSize: 10, MaxBatchSize: 5}, "invalid audit truncate log max batch size 5, must be greater than max event size (10)"},
	} {
		got := ""
		if err := ValidateTruncate("log", tc.cfg); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
