package openapi

import "testing"

func TestAcceptsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                     true,
		"application/json":     true,
		"*/*":                  true,
		"application/*;q=0.5":  true,
		"application/json;q=0": false,
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf":                         false,
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json;q=0.9": true,
		"text/html":                   false,
		"application/yaml, */*;q=0.1": true,
		"garbage;;;":                  false,
	} {
		if got := acceptsJSON(accept); got != want {
			t.Errorf("acceptsJSON(%q) = %v, want %v", accept, got, want)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                 false,
		"gzip":             true,
		"deflate, gzip":    true,
		"GZIP;q=0.5":       true,
		"gzip;q=0":         false,
		"gzip;q=0.000":     false,
		"*":                true,
		"br":               false,
		"identity, x-gzip": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func TestNoneMatch(t *testing.T) {
	const h = "ABC"
	for header, want := range map[string]bool{
		"":             false,
		`"ABC"`:        true,
		`W/"ABC"`:      true,
		`"ABC-gzip"`:   true,
		`"XYZ", "ABC"`: true,
		`*`:            true,
		`"AB"`:         false,
		`ABC`:          false,
	} {
		if got := noneMatch(header, h); got != want {
			t.Errorf("noneMatch(%q) = %v, want %v", header, got, want)
		}
	}
}
