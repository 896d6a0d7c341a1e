package openapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-openapi/spec"
)

// Remote is what an aggregator fetched from one backend: its Swagger 2.0
// document and the OpenAPI 3.0 documents of the group-versions it serves.
type Remote struct {
	// Name says where the documents come from, for errors (an APIService).
	Name string
	// V2 is the backend's /openapi/v2 (JSON); nil when it has none.
	V2 []byte
	// V2Prefixes, when set, limit the paths taken from V2 to those equal
	// to one of them or under it ("/apis/<group>/<version>"): a backend
	// documents its own copies of the system groups too, which are not
	// what the aggregator sends it.
	V2Prefixes []string
	// V3 holds the backend's OpenAPI 3.0 documents (JSON) by path, as its
	// /openapi/v3 index lists them: "apis/<group>/<version>".
	V3 map[string][]byte
}

// Merge returns the documents an aggregator serves: local's, with the
// remotes' added, in order. The paths and definitions of each remote
// Swagger document join local's; a path or definition already there (the
// meta types every server defines, say) keeps the first one. Each remote
// OpenAPI 3.0 document is served under its own path, replacing a local
// document of the same path: the backend serves that group-version. local
// is not modified.
func Merge(local *Documents, remotes []Remote) (*Documents, error) {
	var sw spec.Swagger
	if err := json.Unmarshal(local.v2.json, &sw); err != nil {
		return nil, fmt.Errorf("openapi: copying the local document: %w", err)
	}
	if sw.Paths == nil {
		sw.Paths = &spec.Paths{}
	}
	if sw.Paths.Paths == nil {
		sw.Paths.Paths = map[string]spec.PathItem{}
	}
	if sw.Definitions == nil {
		sw.Definitions = spec.Definitions{}
	}
	v3 := make(map[string]*encoded, len(local.v3))
	for p, e := range local.v3 {
		v3[p] = e
	}
	for _, r := range remotes {
		if len(r.V2) > 0 {
			var rs spec.Swagger
			if err := json.Unmarshal(r.V2, &rs); err != nil {
				return nil, fmt.Errorf("openapi: the v2 document of %s: %w", r.Name, err)
			}
			if rs.Paths != nil {
				for p, item := range rs.Paths.Paths {
					if !underAny(p, r.V2Prefixes) {
						continue
					}
					if _, dup := sw.Paths.Paths[p]; !dup {
						sw.Paths.Paths[p] = item
					}
				}
			}
			for name, def := range rs.Definitions {
				if _, dup := sw.Definitions[name]; !dup {
					sw.Definitions[name] = def
				}
			}
		}
		for p, doc := range r.V3 {
			p = strings.Trim(p, "/")
			if !json.Valid(doc) {
				return nil, fmt.Errorf("openapi: the v3 document %s of %s is not JSON", p, r.Name)
			}
			enc, err := encode(json.RawMessage(doc))
			if err != nil {
				return nil, err
			}
			v3[p] = enc
		}
	}
	d := &Documents{swagger: &sw, v3: v3}
	var err error
	if d.v2, err = encode(&sw); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(v3))
	for p := range v3 {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	index := indexDocument{Paths: map[string]indexEntry{}}
	for _, p := range paths {
		index.Paths[p] = indexEntry{ServerRelativeURL: serverRelativeURL(p, v3[p].hash)}
	}
	if d.v3Index, err = encode(index); err != nil {
		return nil, err
	}
	return d, nil
}

// underAny reports whether path is one of prefixes or under one; no
// prefixes match everything.
func underAny(path string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		p = strings.TrimSuffix(p, "/")
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
