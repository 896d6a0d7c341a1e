package ttlcache

import (
	"sync"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, int](4, func() time.Time { return now })
	c.Add("a", 1, time.Second)
	c.Add("zero", 2, 0)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v", v, ok)
	}
	if _, ok := c.Get("zero"); ok {
		t.Error("a zero TTL was stored")
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("a"); ok {
		t.Error("an entry outlived its TTL")
	}
	if c.Len() != 0 {
		t.Errorf("expired entry kept: len %d", c.Len())
	}
	for i := 0; i < 100; i++ {
		c.Add(string(rune('a'+i%26))+string(rune('0'+i/26)), i, time.Hour)
		if c.Len() > 4 {
			t.Fatalf("cache grew to %d past its bound of 4", c.Len())
		}
	}
	c.Add("k", 1, time.Hour)
	c.Add("k", 2, time.Hour)
	if v, _ := c.Get("k"); v != 2 {
		t.Errorf("replacing a key: got %d", v)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := New[int, int](64, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.Add(i%100, i, time.Minute)
				c.Get(i % 100)
			}
		}()
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Errorf("len %d past the bound", c.Len())
	}
}
