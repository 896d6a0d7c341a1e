package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
)

// TruncatedAnnotation marks an event whose request and response objects
// were left out for its size, as kube-apiserver marks it.
const TruncatedAnnotation = "audit.k8s.io/truncated"

// TruncateConfig bounds events (--audit-*-truncate-max-event-size) and
// batches (--audit-*-truncate-max-batch-size), in bytes of JSON.
type TruncateConfig struct {
	MaxEventSize int64
	MaxBatchSize int64
}

// ValidateTruncate checks cfg with kube-apiserver's messages; plugin is
// "log" or "webhook".
func ValidateTruncate(plugin string, cfg TruncateConfig) error {
	if cfg.MaxEventSize <= 0 {
		return fmt.Errorf("invalid audit truncate %s max event size %v, must be a positive number", plugin, cfg.MaxEventSize)
	}
	if cfg.MaxBatchSize < cfg.MaxEventSize {
		return fmt.Errorf("invalid audit truncate %s max batch size %v, must be greater than max event size (%v)", plugin, cfg.MaxBatchSize, cfg.MaxEventSize)
	}
	return nil
}

// TruncateSink sits in front of a backend as kube-apiserver's truncating
// backend does: an event larger than MaxEventSize loses its request and
// response objects (if its level recorded them) and gains the annotation
// audit.k8s.io/truncated: "true"; one still too large is dropped and
// logged. Events go on one at a time, so no batch it passes exceeds
// MaxBatchSize (it is never less than MaxEventSize).
type TruncateSink struct {
	next Sink
	cfg  TruncateConfig
}

// NewTruncateSink truncates events for next.
func NewTruncateSink(next Sink, cfg TruncateConfig) *TruncateSink {
	return &TruncateSink{next: next, cfg: cfg}
}

var errTooLarge = errors.New("event is too large even after truncating")

// truncated is ev within the size, or an error.
func (t *TruncateSink) truncated(ev *Event) (*Event, error) {
	size, err := jsonSize(ev)
	if err == nil && size > t.cfg.MaxEventSize && (ev.Level == LevelRequest || ev.Level == LevelRequestResponse) {
		cp := *ev
		cp.RequestObject, cp.ResponseObject = nil, nil
		cp.Annotations = maps.Clone(ev.Annotations)
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[TruncatedAnnotation] = "true"
		ev = &cp
		size, err = jsonSize(ev)
	}
	if err != nil {
		return nil, err
	}
	if size > t.cfg.MaxEventSize {
		return nil, errTooLarge
	}
	return ev, nil
}

func jsonSize(ev *Event) (int64, error) {
	b, err := json.Marshal(ev)
	return int64(len(b)), err
}

// Log implements Sink.
func (t *TruncateSink) Log(ev *Event) {
	out, err := t.truncated(ev)
	if err != nil {
		slog.Error("an audit event was dropped", "auditID", ev.AuditID, "stage", ev.Stage, "err", err)
		return
	}
	t.next.Log(out)
}

// Store implements StrictSink: a dropped event fails only when the
// backend behind is strict.
func (t *TruncateSink) Store(ev *Event) error {
	strict, isStrict := t.next.(StrictSink)
	out, err := t.truncated(ev)
	if err != nil {
		slog.Error("an audit event was dropped", "auditID", ev.AuditID, "stage", ev.Stage, "err", err)
		if isStrict {
			return err
		}
		return nil
	}
	if isStrict {
		return strict.Store(out)
	}
	t.next.Log(out)
	return nil
}
