package library

import (
	"errors"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in      string
		want    string // value as a decimal with nine fraction digits
		wantErr error
	}{
		{in: "0", want: "0.000000000"},
		{in: "1", want: "1.000000000"},
		{in: "+1", want: "1.000000000"},
		{in: "-1.5", want: "-1.500000000"},
		{in: "500m", want: "0.500000000"},
		{in: "1Ki", want: "1024.000000000"},
		{in: "1.5Gi", want: "1610612736.000000000"},
		{in: "2k", want: "2000.000000000"},
		{in: "1e3", want: "1000.000000000"},
		{in: "1E-3", want: "0.001000000"},
		{in: "1.5e+2", want: "150.000000000"},
		{in: "5n", want: "0.000000005"},
		{in: ".5", want: "0.500000000"},
		{in: "5.", want: "5.000000000"},
		// kube rounds up to nano precision, away from zero.
		{in: "0.0000000001", want: "0.000000001"},
		{in: "-0.0000000001", want: "-0.000000001"},
		{in: "100E", want: "100000000000000000000.000000000"},
		{in: "", wantErr: ErrQuantityFormat},
		{in: "abc", wantErr: ErrQuantityFormat},
		{in: "1.2.3", wantErr: ErrQuantityFormat},
		{in: "1 ", wantErr: ErrQuantityFormat},
		{in: "1Kb", wantErr: ErrQuantityFormat},
		{in: "1KiB", wantErr: ErrQuantityFormat},
		{in: "1mi", wantErr: ErrQuantitySuffix},
		{in: "1e", wantErr: ErrQuantitySuffix},
		{in: "1Ki2", wantErr: ErrQuantitySuffix},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			q, err := ParseQuantity(tc.in)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := q.String(); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"1", "1.5Gi", "500m", "1e3", "-0.1n", "100E", "1e999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuantity(s)
		if err != nil {
			return
		}
		// A parsed quantity prints and parses back to itself.
		again, err := ParseQuantity(q.String())
		if err != nil || again.Cmp(q) != 0 {
			t.Fatalf("%q -> %s -> %v, %v", s, q, again, err)
		}
	})
}
