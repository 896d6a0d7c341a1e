package fieldmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/apikit-dev/apikit/meta"
)

// Apply merges patch, an applied configuration as JSON, into live (an
// empty object when the object does not exist yet) for manager, and
// returns the merged object with its managedFields. Fields other managers
// own with other values are conflicts (a 409 naming each), unless force.
func (m *Manager) Apply(live meta.Object, patch []byte, manager string, force bool) (meta.Object, error) {
	if err := m.CheckApplyPatch(patch); err != nil {
		return nil, err
	}
	if live == nil {
		live = m.newObject()
	}
	mf, err := decodeManaged(live.GetObjectMeta().ManagedFields)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("failed to decode managed fields: %v", err))
	}
	liveT, err := m.typedLive(live)
	if err != nil {
		return nil, unknownError(fmt.Sprintf("failed to create typed live object (%s): %v", m.describe(live), err))
	}
	patchT, err := m.typedJSON(patch)
	if err != nil {
		return nil, unknownError(fmt.Sprintf("failed to create typed patch object (%s): %v", m.describe(live), err))
	}
	id, err := managerID(meta.ManagedFields{Manager: manager, Operation: OperationApply, Subresource: m.subresource})
	if err != nil {
		return nil, meta.NewInternalError(err)
	}
	newT, fields, err := m.updater.Apply(liveT, patchT, m.version, mf.fields, id, force)
	var conflicts merge.Conflicts
	if errors.As(err, &conflicts) && manager == kubectlManager {
		// Moving from client-side apply: kubectl may take over what
		// its last-applied annotation says it set, where the object
		// still holds those values.
		if allowed, ok := m.lastAppliedFields(live, liveT); ok {
			if rest := withoutAllowed(conflicts, allowed); len(rest) > 0 {
				err = rest
			} else {
				newT, fields, err = m.updater.Apply(liveT, patchT, m.version, mf.fields, id, true)
			}
		}
	}
	if err != nil {
		if errors.As(err, &conflicts) {
			return nil, conflictError(conflicts)
		}
		return nil, meta.NewInternalError(err)
	}
	mf.fields = fields
	strip(mf.fields, id)
	if newT == nil {
		// Nothing changed: the live object, without a new time.
		newT = liveT
	} else {
		t := m.now()
		mf.times[id] = &t
	}
	obj, err := m.toObject(newT)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("failed to convert new typed object (%s) to object: %v", m.describe(live), err))
	}
	if manager == kubectlManager && hasLastApplied(live) {
		if err := setLastApplied(obj, patch); err != nil {
			return nil, meta.NewInternalError(fmt.Errorf("failed to set last-applied annotation: %v", err))
		}
	}
	if obj.GetObjectMeta().ManagedFields, err = mf.encode(); err != nil {
		return nil, meta.NewInternalError(err)
	}
	return obj, nil
}

func (m *Manager) toObject(v *typed.TypedValue) (meta.Object, error) {
	data, err := value.ToJSON(v.AsValue())
	if err != nil {
		return nil, err
	}
	obj := m.newObject()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// describe names an object in errors as kube-apiserver does:
// "namespace/name; group/version, Kind=Kind".
func (m *Manager) describe(obj meta.Object) string {
	om := obj.GetObjectMeta()
	return fmt.Sprintf("%s/%s; %s", om.Namespace, om.Name, gvkString(m.gvk))
}

// gvkString is Kubernetes' String of a GroupVersionKind.
func gvkString(gvk meta.GroupVersionKind) string {
	return gvk.GroupVersion().String() + ", Kind=" + gvk.Kind
}

// unknownError is a 500 whose message is the error itself, as
// kube-apiserver answers errors that are not API statuses.
func unknownError(msg string) *meta.StatusError {
	return &meta.StatusError{ErrStatus: meta.Status{Status: meta.StatusFailure, Code: http.StatusInternalServerError, Message: msg}}
}

// conflictError is kube-apiserver's 409 for apply conflicts: one cause per
// field, the message listing them by manager.
func conflictError(conflicts merge.Conflicts) *meta.StatusError {
	causes := make([]meta.StatusCause, 0, len(conflicts))
	byManager := map[string][]fieldpath.Path{}
	for _, c := range conflicts {
		causes = append(causes, meta.StatusCause{Type: "FieldManagerConflict", Message: "conflict with " + printManager(c.Manager), Field: c.Path.String()})
		byManager[c.Manager] = append(byManager[c.Manager], c.Path)
	}
	var msg string
	if len(conflicts) == 1 {
		msg = fmt.Sprintf("Apply failed with 1 conflict: conflict with %s: %s", printManager(conflicts[0].Manager), conflicts[0].Path)
	} else {
		var lines []string
		for _, mgr := range sortedManagers(byManager) {
			lines = append(lines, fmt.Sprintf("conflicts with %s:", printManager(mgr)))
			for _, p := range byManager[mgr] {
				lines = append(lines, fmt.Sprintf("- %s", p))
			}
		}
		msg = fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n"))
	}
	return &meta.StatusError{ErrStatus: meta.Status{Status: meta.StatusFailure, Code: http.StatusConflict,
		Reason: meta.StatusReasonConflict, Message: msg, Details: &meta.StatusDetails{Causes: causes}}}
}

// printManager names a manager in conflicts: `"name"`, with its
// subresource, and for an updater the version it used.
func printManager(id string) string {
	var e meta.ManagedFields
	if err := json.Unmarshal([]byte(id), &e); err != nil {
		return fmt.Sprintf("%q", id)
	}
	s := fmt.Sprintf("%q", e.Manager)
	if e.Subresource != "" {
		s = fmt.Sprintf("%s with subresource %q", s, e.Subresource)
	}
	if e.Operation == OperationUpdate {
		return fmt.Sprintf("%s using %s", s, e.APIVersion)
	}
	return s
}

func hasLastApplied(obj meta.Object) bool {
	return obj.GetObjectMeta().Annotations[LastAppliedAnnotation] != ""
}

// setLastApplied keeps client-side apply's annotation true after kubectl
// applies server-side: it becomes the applied configuration.
func setLastApplied(obj meta.Object, patch []byte) error {
	var cfg map[string]any
	if err := json.Unmarshal(patch, &cfg); err != nil {
		return err
	}
	if md, ok := cfg["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			// An emptied map stays, as in kube-apiserver.
			delete(ann, LastAppliedAnnotation)
		}
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	om := obj.GetObjectMeta()
	if om.Annotations == nil {
		om.Annotations = map[string]string{}
	}
	// Encoded as client-side apply encodes it (a JSON stream: a
	// trailing newline), so that kubectl's next client-side apply finds
	// nothing to change.
	om.Annotations[LastAppliedAnnotation] = string(data) + "\n"
	return nil
}

// lastAppliedFields are the fields client-side apply's annotation says
// kubectl set, and which the live object still holds as applied.
func (m *Manager) lastAppliedFields(live meta.Object, liveT *typed.TypedValue) (*fieldpath.Set, bool) {
	last := live.GetObjectMeta().Annotations[LastAppliedAnnotation]
	if last == "" {
		return nil, false
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal([]byte(last), &head); err != nil || head.APIVersion != string(m.version) {
		return nil, false
	}
	lastT, err := m.typedJSON([]byte(last))
	if err != nil {
		return nil, false
	}
	set, err := lastT.ToFieldSet()
	if err != nil {
		return nil, false
	}
	cmp, err := lastT.Compare(liveT)
	if err != nil {
		return nil, false
	}
	return set.Difference(cmp.Modified).Difference(cmp.Added).Difference(cmp.Removed), true
}

func withoutAllowed(conflicts merge.Conflicts, allowed *fieldpath.Set) merge.Conflicts {
	var rest merge.Conflicts
	for _, c := range conflicts {
		if !allowed.Has(c.Path) {
			rest = append(rest, c)
		}
	}
	return rest
}
