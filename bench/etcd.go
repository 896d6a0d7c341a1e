package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/apikit-dev/apikit/internal/etcdtest"
)

// etcdServer is the one etcd process both API servers and the raw
// compare-and-put measurement share.
type etcdServer struct {
	proc     *process
	endpoint string
	client   *clientv3.Client
}

// startEtcd starts etcd on free loopback ports with its data in dir. With
// fsync false it runs with --unsafe-no-fsync, so that the API servers, not
// the disk, are what is measured.
func startEtcd(ctx context.Context, bin, dir string, fsync bool) (*etcdServer, error) {
	ports, err := etcdtest.FreePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	args := []string{
		"--name=bench",
		"--data-dir=" + filepath.Join(dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=bench=" + peerURL,
		"--initial-cluster-state=new",
		"--log-level=warn",
	}
	if !fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	p, err := startProcess("etcd", bin, args, filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for !etcdHealthy(clientURL) {
		if p.done() {
			return nil, fmt.Errorf("etcd exited before it was healthy:\n%s", p.tail(20))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = p.stop(10 * time.Second)
			return nil, fmt.Errorf("etcd not healthy after 60s:\n%s", p.tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		_ = p.stop(10 * time.Second)
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &etcdServer{proc: p, endpoint: clientURL, client: c}, nil
}

// stop closes the client and stops the process.
func (e *etcdServer) stop() error {
	_ = e.client.Close()
	return e.proc.stop(20 * time.Second)
}

func etcdHealthy(clientURL string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(clientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(b.String(), `"health":"true"`)
}

// wipe deletes every key under prefix and compacts etcd's history, so that
// each server starts on an empty prefix and etcd stays the same size from
// run to run. Only call it while no API server is running.
func (e *etcdServer) wipe(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := e.client.Delete(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("deleting etcd keys under %s: %w", prefix, err)
	}
	if _, err := e.client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !strings.Contains(err.Error(), "compacted") {
		return fmt.Errorf("compacting etcd at revision %d: %w", resp.Header.Revision, err)
	}
	return nil
}

// valueSize is the size of the first value under prefix, 0 if none.
func (e *etcdServer) valueSize(ctx context.Context, prefix string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := e.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("reading a value under %s: %w", prefix, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return len(resp.Kvs[0].Value), nil
}

// casResult is one raw compare-and-put measurement.
type casResult struct {
	ops     int
	elapsed time.Duration
	errors  int
}

// throughput is operations per second.
func (r casResult) throughput() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// compareAndPut creates n keys under prefix with values of size bytes, from
// workers goroutines over one client connection, each as an API server's
// create is: a transaction that puts the key if it does not exist yet.
func (e *etcdServer) compareAndPut(ctx context.Context, prefix string, n, workers, size int) (casResult, error) {
	value := bytes.Repeat([]byte("x"), size)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%08d", prefix, i)
	}
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	started := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				key := keys[i]
				resp, err := e.client.Txn(ctx).
					If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, string(value))).
					Commit()
				if err != nil || !resp.Succeeded {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	r := casResult{ops: n, elapsed: time.Since(started), errors: int(errs.Load())}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if r.errors > 0 {
		return r, fmt.Errorf("raw etcd compare-and-put: %d of %d failed", r.errors, n)
	}
	return r, nil
}
