package storagetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

func testCreate(t *testing.T, f Factory) {
	t.Run("returns the revision it stored", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/create/a", v)
		sameKV(t, "Get after Create", mustGet(t, ctx, s, "/create/a"), "/create/a", v, rev)
		rev2 := mustCreate(t, ctx, s, "/create/b", value("b", 1))
		if rev2 <= rev {
			t.Fatalf("second Create returned revision %d, not after %d", rev2, rev)
		}
	})
	t.Run("existing key is AlreadyExists and keeps its value", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/create/a", v)
		_, err := s.Create(ctx, "/create/a", value("a", 2))
		wantCode(t, "second Create", err, storage.ErrAlreadyExists)
		sameKV(t, "Get after failed Create", mustGet(t, ctx, s, "/create/a"), "/create/a", v, rev)
	})
	t.Run("deleted key can be created again", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		mustCreate(t, ctx, s, "/create/a", value("a", 1))
		del := mustDelete(t, ctx, s, "/create/a")
		rev := mustCreate(t, ctx, s, "/create/a", value("a", 2))
		if rev <= del.Revision {
			t.Fatalf("Create after Delete returned revision %d, not after the delete's %d", rev, del.Revision)
		}
	})
}

func testGet(t *testing.T, f Factory) {
	t.Run("missing key", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		_, err := s.Get(ctx, "/get/missing", storage.GetOptions{})
		wantCode(t, "Get", err, storage.ErrNotFound)
		kv, err := s.Get(ctx, "/get/missing", storage.GetOptions{IgnoreNotFound: true})
		if err != nil || kv.Key != "" || kv.Value != nil || kv.Revision != 0 {
			t.Fatalf("Get with IgnoreNotFound = %+v, %v; want a zero KeyValue", kv, err)
		}
	})
	t.Run("MinRevision", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/get/a", v)
		mustCreate(t, ctx, s, "/get/b", value("b", 1))
		cur := currentRevision(t, ctx, s)
		for _, tc := range []struct {
			name    string
			min     int64
			wantErr *storage.Error
		}{
			{"older than the object", rev - 1, nil},
			{"the object's revision", rev, nil},
			{"the current revision", cur, nil},
			{"a future revision", cur + 1000, storage.ErrTooLargeResourceVersion},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				kv, err := s.Get(ctx, "/get/a", storage.GetOptions{MinRevision: tc.min})
				if tc.wantErr != nil {
					wantCode(t, "Get", err, tc.wantErr)
					if d := time.Since(start); d > maxRevisionWait {
						t.Fatalf("Get waited %v before failing; want at most %v", d, maxRevisionWait)
					}
					return
				}
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				sameKV(t, "Get", kv, "/get/a", v, rev)
			})
		}
	})
	t.Run("MinRevision waits for a write that is coming", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/get/a", v)
		cur := currentRevision(t, ctx, s)
		done := make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_, err := s.Create(ctx, "/get/b", value("b", 1))
			done <- err
		}()
		kv, err := s.Get(ctx, "/get/a", storage.GetOptions{MinRevision: cur + 1})
		if werr := <-done; werr != nil {
			t.Fatalf("Create: %v", werr)
		}
		if err != nil {
			t.Fatalf("Get with MinRevision one ahead: %v", err)
		}
		sameKV(t, "Get", kv, "/get/a", v, rev)
	})
}

// counterIncrement is an UpdateFunc over a JSON number.
func counterIncrement(cur storage.KeyValue) ([]byte, error) {
	n, err := strconv.Atoi(string(cur.Value))
	if err != nil {
		return nil, err
	}
	return []byte(strconv.Itoa(n + 1)), nil
}

func testGuaranteedUpdate(t *testing.T, f Factory) {
	t.Run("updates an existing key", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v1, v2 := value("a", 1), value("a", 2)
		rev := mustCreate(t, ctx, s, "/update/a", v1)
		var seen storage.KeyValue
		kv, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
			seen = cur
			return v2, nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate: %v", err)
		}
		sameKV(t, "tryUpdate's argument", seen, "/update/a", v1, rev)
		if kv.Revision <= rev {
			t.Fatalf("update revision %d is not after the create's %d", kv.Revision, rev)
		}
		sameKV(t, "returned value", kv, "/update/a", v2, kv.Revision)
		sameKV(t, "Get", mustGet(t, ctx, s, "/update/a"), "/update/a", v2, kv.Revision)
	})
	t.Run("missing key is NotFound", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		called := false
		_, err := s.GuaranteedUpdate(ctx, "/update/missing", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
			called = true
			return value("x", 1), nil
		})
		wantCode(t, "GuaranteedUpdate", err, storage.ErrNotFound)
		if called {
			t.Fatal("tryUpdate was called for a missing key")
		}
		_, err = s.Get(ctx, "/update/missing", storage.GetOptions{})
		wantCode(t, "Get", err, storage.ErrNotFound)
	})
	t.Run("IgnoreNotFound creates", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		kv, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{IgnoreNotFound: true}, func(cur storage.KeyValue) ([]byte, error) {
			if cur.Value != nil || cur.Revision != 0 {
				t.Errorf("tryUpdate got %+v for a missing key; want a zero KeyValue", cur)
			}
			return v, nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate: %v", err)
		}
		if kv.Revision <= 0 {
			t.Fatalf("revision %d", kv.Revision)
		}
		sameKV(t, "Get", mustGet(t, ctx, s, "/update/a"), "/update/a", v, kv.Revision)
	})
	t.Run("unchanged bytes write nothing", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/update/a", v)
		before := currentRevision(t, ctx, s)
		kv, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
			return bytes.Clone(cur.Value), nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate: %v", err)
		}
		sameKV(t, "returned value", kv, "/update/a", v, rev)
		if after := currentRevision(t, ctx, s); after != before {
			t.Fatalf("a no-op update moved the store from revision %d to %d", before, after)
		}
	})
	t.Run("error from tryUpdate aborts", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/update/a", v)
		boom := errors.New("boom")
		_, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
			return nil, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("GuaranteedUpdate returned %v, want the error from tryUpdate", err)
		}
		sameKV(t, "Get", mustGet(t, ctx, s, "/update/a"), "/update/a", v, rev)
	})
	t.Run("Precondition refuses", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/update/a", v)
		called := false
		_, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{Precondition: uidPrecondition("other")},
			func(storage.KeyValue) ([]byte, error) {
				called = true
				return value("a", 2), nil
			})
		if err == nil {
			t.Fatal("GuaranteedUpdate succeeded despite a failing precondition")
		}
		if called {
			t.Fatal("tryUpdate was called although the precondition refused")
		}
		sameKV(t, "Get", mustGet(t, ctx, s, "/update/a"), "/update/a", v, rev)

		kv, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{Precondition: uidPrecondition("uid-a")},
			func(storage.KeyValue) ([]byte, error) { return value("a", 2), nil })
		if err != nil {
			t.Fatalf("GuaranteedUpdate with a matching precondition: %v", err)
		}
		sameKV(t, "Get", mustGet(t, ctx, s, "/update/a"), "/update/a", value("a", 2), kv.Revision)
	})
	t.Run("stale Suggestion", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			// update builds tryUpdate from the stale value; the result
			// must be computed from the current one.
			update func(stale []byte) storage.UpdateFunc
			want   func(current []byte) []byte
		}{
			{
				name: "retries with the current value",
				update: func([]byte) storage.UpdateFunc {
					return func(cur storage.KeyValue) ([]byte, error) {
						o := decodeNoT(cur.Value)
						return value("a", o.N+10), nil
					}
				},
				want: func([]byte) []byte { return value("a", 12) },
			},
			{
				name: "no-op on the stale value is not trusted",
				update: func(stale []byte) storage.UpdateFunc {
					return func(storage.KeyValue) ([]byte, error) { return stale, nil }
				},
				want: func([]byte) []byte { return value("a", 1) },
			},
			{
				name: "error on the stale value is retried",
				update: func(stale []byte) storage.UpdateFunc {
					return func(cur storage.KeyValue) ([]byte, error) {
						if bytes.Equal(cur.Value, stale) {
							return nil, errors.New("conflict on stale data")
						}
						return value("a", 3), nil
					}
				},
				want: func([]byte) []byte { return value("a", 3) },
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				stale := value("a", 1)
				rev := mustCreate(t, ctx, s, "/update/a", stale)
				cur := mustUpdate(t, ctx, s, "/update/a", value("a", 2))
				var calls atomic.Int32
				try := tc.update(stale)
				kv, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{
					Suggestion: storage.KeyValue{Key: "/update/a", Value: stale, Revision: rev},
				}, func(c storage.KeyValue) ([]byte, error) {
					calls.Add(1)
					return try(c)
				})
				if err != nil {
					t.Fatalf("GuaranteedUpdate: %v", err)
				}
				want := tc.want(cur.Value)
				if !bytes.Equal(kv.Value, want) {
					t.Fatalf("result %s, want %s", kv.Value, want)
				}
				got := mustGet(t, ctx, s, "/update/a")
				sameKV(t, "Get", got, "/update/a", want, kv.Revision)
				if kv.Revision < cur.Revision {
					t.Fatalf("result revision %d is older than the current %d", kv.Revision, cur.Revision)
				}
			})
		}
	})
	t.Run("stale Suggestion of a deleted key is NotFound", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		v := value("a", 1)
		rev := mustCreate(t, ctx, s, "/update/a", v)
		mustDelete(t, ctx, s, "/update/a")
		_, err := s.GuaranteedUpdate(ctx, "/update/a", storage.UpdateOptions{
			Suggestion: storage.KeyValue{Key: "/update/a", Value: v, Revision: rev},
		}, func(storage.KeyValue) ([]byte, error) { return value("a", 2), nil })
		wantCode(t, "GuaranteedUpdate", err, storage.ErrNotFound)
		_, err = s.Get(ctx, "/update/a", storage.GetOptions{})
		wantCode(t, "Get", err, storage.ErrNotFound)
	})
	t.Run("concurrent increments lose no update", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		// Every lost compare-and-swap is a raft proposal on etcd, so the
		// writes grow with the square of the writers: 16 still collide on
		// most tries, where 50 took the suite past its minute on a loaded
		// 2-core machine.
		const workers, perWorker = 16, 20
		mustCreate(t, ctx, s, "/update/counter", []byte("0"))
		var wg sync.WaitGroup
		revs := make(chan int64, workers*perWorker)
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				for range perWorker {
					kv, err := s.GuaranteedUpdate(ctx, "/update/counter", storage.UpdateOptions{}, counterIncrement)
					if err != nil {
						errs <- err
						return
					}
					revs <- kv.Revision
				}
			})
		}
		wg.Wait()
		close(errs)
		close(revs)
		for err := range errs {
			t.Fatalf("GuaranteedUpdate: %v", err)
		}
		seen := map[int64]bool{}
		for r := range revs {
			if seen[r] {
				t.Fatalf("two updates returned revision %d", r)
			}
			seen[r] = true
		}
		if got := mustGet(t, ctx, s, "/update/counter"); string(got.Value) != strconv.Itoa(workers*perWorker) {
			t.Fatalf("counter is %s, want %d", got.Value, workers*perWorker)
		}
	})
}

// decodeNoT decodes a value the suite wrote itself, from goroutines where
// t.Fatal is not allowed.
func decodeNoT(b []byte) object {
	var o object
	_ = json.Unmarshal(b, &o)
	return o
}

func testDelete(t *testing.T, f Factory) {
	t.Run("returns the last value at the delete's revision", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		mustCreate(t, ctx, s, "/delete/a", value("a", 1))
		upd := mustUpdate(t, ctx, s, "/delete/a", value("a", 2))
		kv := mustDelete(t, ctx, s, "/delete/a")
		if kv.Revision <= upd.Revision {
			t.Fatalf("delete revision %d is not after the last write's %d", kv.Revision, upd.Revision)
		}
		sameKV(t, "Delete", kv, "/delete/a", value("a", 2), kv.Revision)
		if cur := currentRevision(t, ctx, s); cur < kv.Revision {
			t.Fatalf("CurrentRevision %d is before the delete's %d", cur, kv.Revision)
		}
		_, err := s.Get(ctx, "/delete/a", storage.GetOptions{})
		wantCode(t, "Get after Delete", err, storage.ErrNotFound)
	})
	t.Run("missing key is NotFound", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		_, err := s.Delete(ctx, "/delete/missing", storage.DeleteOptions{})
		wantCode(t, "Delete", err, storage.ErrNotFound)
	})
	for _, tc := range []struct {
		name    string
		opts    func(rev int64) storage.DeleteOptions
		refused *storage.Error // nil: any error
		ok      bool
	}{
		{"ExpectedRevision matches", func(rev int64) storage.DeleteOptions { return storage.DeleteOptions{ExpectedRevision: rev} }, nil, true},
		{"ExpectedRevision differs", func(rev int64) storage.DeleteOptions { return storage.DeleteOptions{ExpectedRevision: rev - 1} }, storage.ErrConflict, false},
		{"Precondition matches", func(int64) storage.DeleteOptions {
			return storage.DeleteOptions{Precondition: uidPrecondition("uid-a")}
		}, nil, true},
		{"Precondition refuses", func(int64) storage.DeleteOptions {
			return storage.DeleteOptions{Precondition: uidPrecondition("uid-other")}
		}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ctx := newStore(t, f), testContext(t)
			mustCreate(t, ctx, s, "/delete/a", value("a", 1))
			cur := mustUpdate(t, ctx, s, "/delete/a", value("a", 2))
			kv, err := s.Delete(ctx, "/delete/a", tc.opts(cur.Revision))
			if tc.ok {
				if err != nil {
					t.Fatalf("Delete: %v", err)
				}
				sameKV(t, "Delete", kv, "/delete/a", value("a", 2), kv.Revision)
				_, err = s.Get(ctx, "/delete/a", storage.GetOptions{})
				wantCode(t, "Get after Delete", err, storage.ErrNotFound)
				return
			}
			if err == nil {
				t.Fatal("Delete succeeded; want it refused")
			}
			if tc.refused != nil {
				wantCode(t, "Delete", err, tc.refused)
			}
			sameKV(t, "Get after refused Delete", mustGet(t, ctx, s, "/delete/a"), "/delete/a", value("a", 2), cur.Revision)
		})
	}
	t.Run("Precondition is checked again after a race", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			newUID  string // the uid a racing writer sets
			deleted bool
		}{
			{"racing write keeps the uid", "uid-a", true},
			{"racing write changes the uid", "uid-b", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				mustCreate(t, ctx, s, "/delete/a", value("a", 1))
				calls := 0
				check := uidPrecondition("uid-a")
				var raced storage.KeyValue
				_, err := s.Delete(ctx, "/delete/a", storage.DeleteOptions{Precondition: func(cur storage.KeyValue) error {
					calls++
					if calls == 1 {
						// Another writer commits between the check and the delete.
						raced = mustUpdate(t, ctx, s, "/delete/a", valueUID("a", tc.newUID, 2))
					}
					return check(cur)
				}})
				if calls < 2 {
					t.Fatalf("precondition was called %d times; want it checked again after the race", calls)
				}
				if tc.deleted {
					if err != nil {
						t.Fatalf("Delete: %v", err)
					}
					_, err = s.Get(ctx, "/delete/a", storage.GetOptions{})
					wantCode(t, "Get after Delete", err, storage.ErrNotFound)
					return
				}
				if err == nil {
					t.Fatal("Delete succeeded although the object's uid changed")
				}
				sameKV(t, "Get after refused Delete", mustGet(t, ctx, s, "/delete/a"), "/delete/a", raced.Value, raced.Revision)
			})
		}
	})
}

func testCurrentRevision(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	var last int64
	check := func(what string, rev int64) {
		t.Helper()
		cur := currentRevision(t, ctx, s)
		if cur < rev {
			t.Fatalf("after %s: CurrentRevision %d is before the revision %d it returned", what, cur, rev)
		}
		if cur < last {
			t.Fatalf("CurrentRevision went back from %d to %d", last, cur)
		}
		last = cur
	}
	check("nothing", 0)
	check("Create", mustCreate(t, ctx, s, "/rev/a", value("a", 1)))
	check("GuaranteedUpdate", mustUpdate(t, ctx, s, "/rev/a", value("a", 2)).Revision)
	l, err := s.List(ctx, "/rev/", storage.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	check("List", l.Revision)
	check("Delete", mustDelete(t, ctx, s, "/rev/a").Revision)
	kv, err := s.GuaranteedUpdate(ctx, "/rev/b", storage.UpdateOptions{IgnoreNotFound: true}, func(storage.KeyValue) ([]byte, error) {
		return value("b", 1), nil
	})
	if err != nil {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	check("GuaranteedUpdate creating", kv.Revision)
}
