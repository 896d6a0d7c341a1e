package main

import (
	"math"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"duplicates", []float64{2, 2, 9}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			if got := median(tc.in); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("median changed its input: %v, was %v", tc.in, in)
				}
			}
		})
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

func TestPercentile(t *testing.T) {
	var hundred []time.Duration
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p100 of 1..100", hundred, 100, 100 * time.Millisecond},
		{"p99 of three is the largest", []time.Duration{3, 1, 2}, 99, 3},
		{"p1 of three is the smallest", []time.Duration{3, 1, 2}, 1, 1},
		{"empty", nil, 99, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(p%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestMinMaxAndRatio(t *testing.T) {
	if lo, hi := minMax([]float64{3, -1, 7}); lo != -1 || hi != 7 {
		t.Errorf("minMax = %v, %v; want -1, 7", lo, hi)
	}
	if lo, hi := minMax(nil); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("minMax(nil) = %v, %v; want NaN", lo, hi)
	}
	if got := ratio(1, 4); got != 0.25 {
		t.Errorf("ratio(1, 4) = %v", got)
	}
	for _, tc := range [][2]float64{{1, 0}, {math.NaN(), 1}, {1, math.NaN()}} {
		if got := ratio(tc[0], tc[1]); !math.IsNaN(got) {
			t.Errorf("ratio(%v, %v) = %v, want NaN", tc[0], tc[1], got)
		}
	}
}
