package structural

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DecodeJSON decodes one JSON document into the value convention every
// schema function of this package reads: map[string]any, []any, string,
// bool, nil, int64 for a number written as an integer that fits, and
// float64 for any other number (1.5, 1e3, 1.0, integers beyond int64), as
// Kubernetes' JSON decoder (sigs.k8s.io/json) produces them for custom
// resources. A key given twice keeps its last value, as encoding/json keeps
// it; the request decoder reports duplicates separately. Data after the
// document is an error; the size of data is the caller's to bound (the
// registry caps request bodies), and nesting is bounded by encoding/json.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decoding JSON: invalid character after top-level value")
	}
	return convertNumbers(v)
}

// convertNumbers replaces every json.Number in v, in place, by int64 or
// float64.
func convertNumbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		return convertNumber(string(t))
	case map[string]any:
		for k, e := range t {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
	case []any:
		for i, e := range t {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
	}
	return v, nil
}

// convertNumber is int64 first, float64 after, as sigs.k8s.io/json does: a
// number that fits neither (1e400) is an error rather than ±Inf.
func convertNumber(s string) (any, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("decoding JSON: number %s does not fit in a float64", s)
	}
	return f, nil
}
