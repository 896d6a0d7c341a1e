package gc

import (
	"encoding/json"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// collected is the part of an object's metadata the collector keeps: its
// key, its uid and resourceVersion, and what collecting it reads. Labels,
// annotations and managedFields (most of an object's metadata) are not
// kept, and the object is never decoded: its JSON (memoized by the watch
// cache, which LIST and GET share) is read for these fields alone.
type collected struct {
	Metadata struct {
		Name              string                `json:"name"`
		Namespace         string                `json:"namespace"`
		UID               string                `json:"uid"`
		ResourceVersion   string                `json:"resourceVersion"`
		DeletionTimestamp *meta.Time            `json:"deletionTimestamp"`
		OwnerReferences   []meta.OwnerReference `json:"ownerReferences"`
		Finalizers        []string              `json:"finalizers"`
	} `json:"metadata"`
}

func partial(it registry.Item) (*meta.PartialObjectMetadata, error) {
	b, err := it.JSON()
	if err != nil {
		return nil, fmt.Errorf("encoding an item: %w", err)
	}
	var c collected
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("reading an item's metadata: %w", err)
	}
	m := c.Metadata
	return &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}}, nil
}
