package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/go-openapi/spec"
)

// Documents are a server's OpenAPI documents, built once and kept encoded:
// Swagger 2.0 for /openapi/v2 and, for /openapi/v3, an index and one
// OpenAPI 3.0 document per group-version.
type Documents struct {
	swagger *spec.Swagger
	v2      *encoded
	v3Index *encoded
	v3      map[string]*encoded // "apis/<group>/<version>" -> document
}

// encoded is a document as served: its JSON, gzipped once for the clients
// that accept it, and its hash (ETag and ?hash= value).
type encoded struct {
	json, gzip []byte
	hash       string
}

func encode(v any) (*encoded, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding: %w", err)
	}
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("openapi: gzip: %w", err)
	}
	sum := sha512.Sum512(b)
	// kube-apiserver's hash: SHA-512 in upper-case hex.
	return &encoded{json: b, gzip: z.Bytes(), hash: strings.ToUpper(hex.EncodeToString(sum[:]))}, nil
}

// Build builds the documents of the routes and resources in c.
func Build(c Config) (*Documents, error) {
	b, err := newBuilder(c)
	if err != nil {
		return nil, err
	}
	sw, err := b.buildV2()
	if err != nil {
		return nil, err
	}
	if err := checkRefs(sw); err != nil {
		return nil, err
	}
	d := &Documents{swagger: sw, v3: map[string]*encoded{}}
	if d.v2, err = encode(sw); err != nil {
		return nil, err
	}

	// One OpenAPI 3.0 document per WebService root (a group-version), as
	// kube-apiserver serves them; WebServices sharing a root share one.
	paths := map[string]map[string]bool{}
	var roots []string
	for _, ws := range c.WebServices {
		root := strings.Trim(ws.RootPath(), "/")
		if root == "" {
			// A WebService at / has no group-version to be indexed by;
			// it is in the v2 document only.
			continue
		}
		if paths[root] == nil {
			paths[root] = map[string]bool{}
			roots = append(roots, root)
		}
		for _, r := range ws.Routes() {
			paths[root][pathKey(r.Path)] = true
		}
	}
	conv, err := newConverter(sw)
	if err != nil {
		return nil, err
	}
	info := info3{Title: c.Title, Version: c.Version}
	index := indexDocument{Paths: map[string]indexEntry{}}
	for _, root := range roots {
		list := make([]string, 0, len(paths[root]))
		for p := range paths[root] {
			list = append(list, p)
		}
		sort.Strings(list)
		doc, err := conv.document(info, list)
		if err != nil {
			return nil, err
		}
		enc, err := encode(doc)
		if err != nil {
			return nil, err
		}
		d.v3[root] = enc
		index.Paths[root] = indexEntry{ServerRelativeURL: serverRelativeURL(root, enc.hash)}
	}
	if d.v3Index, err = encode(index); err != nil {
		return nil, err
	}
	return d, nil
}

// indexDocument is /openapi/v3: where each group-version's document is.
type indexDocument struct {
	Paths map[string]indexEntry `json:"paths"`
}

type indexEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// serverRelativeURL carries the document's hash, so that clients cache
// it forever and fetch a new URL when it changes.
func serverRelativeURL(root, hash string) string {
	return "/openapi/v3/" + root + "?hash=" + hash
}

// Swagger returns the Swagger 2.0 document. It is shared: callers must not
// modify it.
func (d *Documents) Swagger() *spec.Swagger { return d.swagger }

// V2JSON returns the Swagger 2.0 document as served. It is shared: callers
// must not modify it.
func (d *Documents) V2JSON() []byte { return d.v2.json }

// V3Paths lists the OpenAPI 3.0 documents by path, such as
// apis/wardle.example.com/v1beta1, sorted.
func (d *Documents) V3Paths() []string {
	out := make([]string, 0, len(d.v3))
	for p := range d.v3 {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// V3JSON returns the OpenAPI 3.0 document of path (as V3Paths lists it)
// and its hash. It is shared: callers must not modify it.
func (d *Documents) V3JSON(path string) (doc []byte, hash string, ok bool) {
	e, ok := d.v3[path]
	if !ok {
		return nil, "", false
	}
	return e.json, e.hash, true
}
