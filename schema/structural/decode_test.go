package structural

import (
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    any
		wantErr string
	}{
		{name: "integer", in: `7`, want: int64(7)},
		{name: "negative integer", in: `-7`, want: int64(-7)},
		{name: "max int64", in: `9223372036854775807`, want: int64(9223372036854775807)},
		{name: "beyond int64 is a float", in: `9223372036854775808`, want: float64(9223372036854775808)},
		{name: "decimal point is a float", in: `1.0`, want: float64(1)},
		{name: "exponent is a float", in: `1e3`, want: float64(1000)},
		{name: "fraction", in: `0.5`, want: 0.5},
		{name: "out of float range", in: `1e400`, wantErr: "does not fit"},
		{name: "string", in: `"x"`, want: "x"},
		{name: "null", in: `null`, want: nil},
		{name: "bool", in: `true`, want: true},
		{name: "nested", in: `{"a":[1,2.5,{"b":null}],"c":{"d":"e"}}`, want: map[string]any{
			"a": []any{int64(1), 2.5, map[string]any{"b": nil}},
			"c": map[string]any{"d": "e"},
		}},
		{name: "duplicate keeps the last", in: `{"a":1,"a":2}`, want: map[string]any{"a": int64(2)}},
		{name: "trailing data", in: `{} {}`, wantErr: "after top-level value"},
		{name: "trailing garbage", in: `1 x`, wantErr: "after top-level value"},
		{name: "trailing space is fine", in: " {}\n", want: map[string]any{}},
		{name: "empty", in: ``, wantErr: "decoding JSON"},
		{name: "malformed", in: `{"a":}`, wantErr: "decoding JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeJSON([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeJSON(%s) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeJSON(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeJSON(%s) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}
