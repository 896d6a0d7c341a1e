package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/webhook"
)

// DefaultWebhookInitialBackoff is kube-apiserver's
// --audit-webhook-initial-backoff.
const DefaultWebhookInitialBackoff = 10 * time.Second

// BatchLogger is a Sink that takes events a batch at a time; a BatchSink
// hands it whole batches.
type BatchLogger interface {
	Sink
	LogBatch(evs []*Event)
}

// WebhookSink posts events, as an audit.k8s.io/v1 EventList, to the
// server a kubeconfig names (--audit-webhook-config-file), retrying a
// failed post (no answer, 429, 5xx) with backoff growing by half from
// the initial one, five attempts in all, as kube-apiserver does; a batch
// that still fails is dropped and logged. Run it behind a BatchSink
// (batch mode) so requests never wait for it.
type WebhookSink struct {
	client *webhook.Client
	ctx    context.Context
	cancel context.CancelFunc
}

// NewWebhookSink posts to the server k names; Close stops posts under way.
func NewWebhookSink(k certs.Kubeconfig, initialBackoff time.Duration) (*WebhookSink, error) {
	c, err := webhook.New(webhook.Config{Kubeconfig: k, Retries: 4})
	if err != nil {
		return nil, fmt.Errorf("audit webhook: %w", err)
	}
	c.Backoff = initialBackoff
	ctx, cancel := context.WithCancel(context.Background())
	return &WebhookSink{client: c, ctx: ctx, cancel: cancel}, nil
}

// Log implements Sink (blocking mode): one event, posted before it returns.
func (w *WebhookSink) Log(ev *Event) { w.LogBatch([]*Event{ev}) }

// LogBatch posts evs as one EventList; a failure is logged.
func (w *WebhookSink) LogBatch(evs []*Event) { _ = w.post(evs) }

func (w *WebhookSink) store(ev *Event) error { return w.post([]*Event{ev}) }

// post sends evs as one EventList, and says whether that failed.
func (w *WebhookSink) post(evs []*Event) error {
	if len(evs) == 0 {
		return nil
	}
	body, err := json.Marshal(eventList{Kind: "EventList", APIVersion: "audit.k8s.io/v1", Items: evs})
	if err != nil {
		slog.Error("encoding audit events for the webhook", "events", len(evs), "err", err)
		return fmt.Errorf("encoding audit events: %w", err)
	}
	if err := w.client.Post(w.ctx, body, nil); err != nil {
		slog.Error("the audit webhook failed; events are lost", "webhook", w.client.URL(), "events", len(evs), "err", err)
		return fmt.Errorf("posting audit events: %w", err)
	}
	return nil
}

// Close ends posts under way (their events are lost).
func (w *WebhookSink) Close() error {
	w.cancel()
	return nil
}

// eventList is an audit.k8s.io/v1 EventList.
type eventList struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Metadata   struct{} `json:"metadata"`
	Items      []*Event `json:"items"`
}
