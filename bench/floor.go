package main

// The transport floor: what any Go API server pays to answer the
// benchmark's GETs and full LISTs over the same connection, before it does
// any work of its own. A run starts this very program as a minimal HTTPS
// server (crypto/tls asking for the client certificate, x/net/http2 as
// both servers configure it, the compressor apikit uses at kube's level,
// writes in apikit's pieces) that answers each GET and LIST with the bytes
// apikit served for it, from memory, and measures it with the same load. A server's CPU per
// operation cannot fall below the floor's: where a target asks for less
// than the floor, no handler code can meet it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/server/respond"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/net/http2"
)

// floorCommand is the first argument that makes this program the floor
// server rather than the benchmark.
const floorCommand = "floor-server"

// floorResult is the floor server's measurements in one run.
type floorResult struct {
	get         *phase
	list, paged *listPhase
}

// floorBodies are the responses the floor server answers with: a GET's,
// a full LIST's and the pages of a paged LIST's (by the continue token
// that asked for each, "" for the first), as a server under test served
// them (decompressed).
type floorBodies struct {
	get, list []byte
	pages     map[string][]byte
}

// captureFloorBodies reads one Flunder, the full LIST and the LIST in
// pages of pageSize from a server, for the floor server to answer with.
func captureFloorBodies(ctx context.Context, c *apiClient, t objectType, name string, pageSize int) (floorBodies, error) {
	var fb floorBodies
	var buf bytes.Buffer
	if err := c.do(ctx, http.MethodGet, t.collection+"/"+name, nil, http.StatusOK, &buf); err != nil {
		return fb, err
	}
	fb.get = bytes.Clone(buf.Bytes())
	if err := c.do(ctx, http.MethodGet, t.collection, nil, http.StatusOK, &buf); err != nil {
		return fb, err
	}
	fb.list = bytes.Clone(buf.Bytes())
	fb.pages = map[string][]byte{}
	token := ""
	_, _, _, err := listAll(ctx, c, t.collection, pageSize, &buf, func(page []byte) error {
		fb.pages[token] = bytes.Clone(page)
		_, next, err := listMeta(page)
		token = next
		return err
	})
	return fb, err
}

// runFloor starts the floor server with bodies and measures n GETs and
// r.p.lists full LISTs of want items on it, as runObjects measures a
// server's.
func (r *runner) runFloor(ctx context.Context, self string, bodies floorBodies, runNo, want int) (*floorResult, error) {
	dir := filepath.Join(r.dir, fmt.Sprintf("floor-%d", runNo))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", dir, err)
	}
	pages, err := json.Marshal(bodies.pages)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	getFile, listFile, pagesFile := filepath.Join(dir, "get.json"), filepath.Join(dir, "list.json"), filepath.Join(dir, "pages.json")
	for f, b := range map[string][]byte{getFile: bodies.get, listFile: bodies.list, pagesFile: pages} {
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
	}
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	c := newAPIClient(url, r.tlsConf)
	c.identity = r.p.identity
	defer c.close()
	proc, err := startProcess("floor", self, []string{floorCommand,
		"-port=" + strconv.Itoa(ports[0]), "-cert=" + r.pki.servingCert, "-key=" + r.pki.servingKey,
		"-get=" + getFile, "-list=" + listFile, "-pages=" + pagesFile}, filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := proc.stop(10 * time.Second); err != nil {
			logger.Printf("floor: %v", err)
		}
	}()
	if _, err := waitReady(ctx, c, proc, time.Now()); err != nil {
		return nil, err
	}
	pid := proc.pid()
	var res floorResult
	n, w := r.p.n, r.p.workers
	bufs := make([]bytes.Buffer, w)
	if res.get, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodGet, collection+"/"+flunderName(i), nil, http.StatusOK, &bufs[wk])
	}); err != nil {
		return nil, fmt.Errorf("floor GET: %w", err)
	}
	if res.list, err = r.lists(ctx, c, pid, collection, 0, want, countItems); err != nil {
		return nil, fmt.Errorf("floor LIST: %w", err)
	}
	if res.paged, err = r.lists(ctx, c, pid, collection, r.p.pageSize, want, countItems); err != nil {
		return nil, fmt.Errorf("floor paged LIST: %w", err)
	}
	return &res, nil
}

// floorServe is the floor server's main: it serves until killed.
func floorServe(args []string) error {
	fs := flag.NewFlagSet(floorCommand, flag.ContinueOnError)
	port := fs.Int("port", 0, "port on 127.0.0.1")
	cert := fs.String("cert", "", "serving certificate")
	key := fs.String("key", "", "serving key")
	getFile := fs.String("get", "", "the body of every GET of one object")
	listFile := fs.String("list", "", "the body of every LIST")
	pagesFile := fs.String("pages", "", "the pages of a paged LIST: a JSON object of bodies by the continue token that asks for each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	get, err := os.ReadFile(*getFile)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	list, err := os.ReadFile(*listFile)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	var pages map[string][]byte
	if b, err := os.ReadFile(*pagesFile); err != nil {
		return fmt.Errorf("floor: %w", err)
	} else if err := json.Unmarshal(b, &pages); err != nil {
		return fmt.Errorf("floor: %s: %w", *pagesFile, err)
	}
	tlsConfig := &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		// As both servers: the client certificate is asked for in the
		// handshake and verified by the server's authenticator, which the
		// floor does not have.
		ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"h2", "http/1.1"},
	}
	srv := &http.Server{Handler: floorHandler(get, list, pages), TLSConfig: tlsConfig, ReadHeaderTimeout: 32 * time.Second}
	if err := http2.ConfigureServer(srv, &http2.Server{
		MaxUploadBufferPerStream:     256 << 10,
		MaxUploadBufferPerConnection: 256 << 10 * 32,
	}); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if err := srv.Serve(tls.NewListener(ln, tlsConfig)); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("floor: %w", err)
	}
	return nil
}

// floorGzipThreshold is the size above which both servers gzip a response
// for a client that accepts it.
const floorGzipThreshold = 128 << 10

// floorHandler answers /readyz, GETs of one object with get, GETs of
// the collection with list, or with a limit with the page of pages its
// continue token names; gzipped as apikit gzips (klauspost's encoder at
// kube's level 1) when it is large and the client accepts it.
func floorHandler(get, list []byte, pages map[string][]byte) http.Handler {
	gzips := sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		return zw
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch {
		case r.URL.Path == "/readyz":
			body = []byte("ok")
		case r.Method == http.MethodGet && r.URL.Path == collection && r.URL.Query().Get("limit") != "":
			var ok bool
			if body, ok = pages[r.URL.Query().Get("continue")]; !ok {
				http.NotFound(w, r)
				return
			}
		case r.Method == http.MethodGet && r.URL.Path == collection:
			body = list
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, collection+"/"):
			body = get
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if len(body) > floorGzipThreshold && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzips.Get().(*gzip.Writer)
			defer gzips.Put(zw)
			// deflate writes a few hundred bytes at a time; the buffer
			// makes them writes of respond.WriteSize, as apikit's.
			bw := bufio.NewWriterSize(w, respond.WriteSize)
			zw.Reset(bw)
			_, _ = zw.Write(body)
			_ = zw.Close()
			_ = bw.Flush()
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		// In writes of respond.WriteSize: an HTTP/2 frame in one TLS
		// record each, the cheapest way out.
		for len(body) > 0 {
			n := min(len(body), respond.WriteSize)
			_, _ = w.Write(body[:n])
			body = body[n:]
		}
	})
}

// floorBodiesOf picks the responses the floor answers with: apikit's, or
// the peer's when apikit did not run.
func floorBodiesOf(rec runRecord) (floorBodies, bool) {
	for _, key := range []string{keyApikit, keySample} {
		if s := rec.servers[key]; s != nil && s.floorBodies != nil {
			return *s.floorBodies, true
		}
	}
	return floorBodies{}, false
}

// floorFigures are the transport floor's medians beside the figures they
// bound, and the peer's, so that a target can be read against the floor.
type floorFigures struct {
	// per run: CPU per GET, per full LIST and per paged LIST (ms)
	get, list, paged []float64
	// the peer's medians of the same (ms)
	sampleGet, sampleList, samplePaged float64
	// the targets of apikit's ratios
	getTarget, listTarget, pagedTarget float64
}

func floorFiguresOf(runs []runRecord, figs []*figure) floorFigures {
	var f floorFigures
	for _, r := range runs {
		if r.floor != nil {
			f.get = append(f.get, r.floor.get.cpuPerOp())
			f.list = append(f.list, r.floor.list.cpuMS())
			f.paged = append(f.paged, r.floor.paged.cpuMS())
		}
	}
	for _, fig := range figs {
		switch fig.name {
		case "GET server CPU per op":
			f.sampleGet, f.getTarget = fig.medianOf(keySample), fig.target
		case "full LIST server CPU":
			f.sampleList, f.listTarget = fig.medianOf(keySample), fig.target
		case "paged LIST server CPU":
			f.samplePaged, f.pagedTarget = fig.medianOf(keySample), fig.target
		}
	}
	return f
}

// rows are the floor's rows of the main table: its median, its share of
// the peer's figure, and the target apikit's ratio is held to. A floor
// share above the target means the target asks for less than the
// transport alone costs.
func (f floorFigures) rows() string {
	if len(f.get) == 0 {
		return ""
	}
	var b strings.Builder
	for _, r := range []struct {
		name, format string
		vals         []float64
		peer, target float64
	}{
		{"transport floor: GET server CPU per op (ms)", "%.3f", f.get, f.sampleGet, f.getTarget},
		{"transport floor: full LIST server CPU (ms)", "%.1f", f.list, f.sampleList, f.listTarget},
		{"transport floor: paged LIST server CPU (ms)", "%.1f", f.paged, f.samplePaged, f.pagedTarget},
	} {
		m := median(r.vals)
		fmt.Fprintf(&b, "| %s | %s | | floor/sample %s | apikit's target %s | |\n",
			r.name, fmtValue(r.format, m), fmtValue("%.2f", ratio(m, r.peer)), fmtValue("%.2f", r.target))
	}
	return b.String()
}
