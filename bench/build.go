package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
)

// sampleVersion is the k8s.io/sample-apiserver release the peer is built
// from (bench/sampleapiserver/go.mod pins it) and the Kubernetes version
// string it reports on /version.
const (
	sampleVersion   = "v0.37.2"
	sampleGitVer    = "v1.37.2"
	sampleGitMajor  = "1"
	sampleGitMinor  = "37"
	stripLinkerFlag = "-s -w"
	// noEmbedTag builds apikit's servers without the embedded etcd
	// (storage/embedded), which the benchmark does not run: the servers
	// store in its etcd, as the peers do, and the peers link no etcd
	// server either.
	noEmbedTag = "apikit_noembed"
)

// binaries are the programs one benchmark run uses.
type binaries struct {
	wardle, sample, etcd string
	etcdVersion          string
}

// builder builds the programs, nicely, caching what does not change with
// apikit's source.
type builder struct {
	repo  string // apikit's repository root
	cache string // where the binaries built once per version are kept (etcd, the peers)
	out   string // where the servers built from the working tree go: the run's own
	tags  string // build tags of apikit's servers (-apikit-tags)
	logf  func(format string, args ...any)
}

// buildAll builds wardle from the working tree (every time: it is what is
// measured) unless not withWardle, and etcd and (withSample) the
// sample-apiserver once per version.
func (b *builder) buildAll(withWardle, withSample bool) (binaries, error) {
	var bins binaries
	var err error
	if bins.etcd, err = b.etcd(); err != nil {
		return bins, err
	}
	if bins.etcdVersion, err = etcdVersion(bins.etcd); err != nil {
		return bins, err
	}
	if withSample {
		if bins.sample, err = b.sample(); err != nil {
			return bins, err
		}
	}
	if withWardle {
		if bins.wardle, err = b.wardle(); err != nil {
			return bins, err
		}
	}
	return bins, nil
}

// goBuild runs `nice -n 10 go build` in dir: the machine is shared.
func (b *builder) goBuild(dir string, env []string, args ...string) error {
	started := time.Now()
	argv := append([]string{"-n", "10", "go", "build"}, args...)
	name := "nice"
	if _, err := exec.LookPath("nice"); err != nil {
		name, argv = "go", argv[2:]
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out.String())
	}
	b.logf("built %s in %v", args[len(args)-1], time.Since(started).Round(time.Second))
	return nil
}

// wardle builds examples/wardle, stripped, from the working tree.
func (b *builder) wardle() (string, error) { return b.example("wardle") }

// example builds examples/<name>, stripped, with the builder's tags, from
// the working tree.
func (b *builder) example(name string) (string, error) {
	bin := filepath.Join(b.out, name)
	if err := b.goBuild(b.repo, []string{"GOWORK=off"}, "-tags="+b.tags, "-ldflags="+stripLinkerFlag, "-o", bin, "./examples/"+name); err != nil {
		return "", err
	}
	return bin, nil
}

// defaultWardle builds examples/wardle without tags, the build with the
// embedded etcd that `go build` gives, for its size and modules only.
func (b *builder) defaultWardle() (*binaryInfo, error) {
	bin := filepath.Join(b.out, "wardle-default")
	if err := b.goBuild(b.repo, []string{"GOWORK=off"}, "-ldflags="+stripLinkerFlag, "-o", bin, "./examples/wardle"); err != nil {
		return nil, err
	}
	info, err := inspect(bin)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// crdServer builds bench/crdserver (the extensions server alone, what the
// CRD mode measures), stripped, from the working tree.
func (b *builder) crdServer() (string, error) {
	bin := filepath.Join(b.out, "crdserver")
	if err := b.goBuild(filepath.Join(b.repo, "bench"), []string{"GOWORK=off"}, "-tags="+b.tags, "-ldflags="+stripLinkerFlag, "-o", bin, "./crdserver"); err != nil {
		return "", err
	}
	return bin, nil
}

// sample builds bench/sampleapiserver, stripped and with a real version
// string, once per content of its folder and Go version.
func (b *builder) sample() (string, error) {
	return b.kubeProgram(kubeProgram{
		what: "k8s.io/sample-apiserver " + sampleVersion, dir: filepath.Join(b.repo, "bench", "sampleapiserver"),
		files: []string{"go.mod", "go.sum", "main.go"}, pkg: ".", name: "sampleapiserver-" + sampleVersion,
		gitVersion: sampleGitVer, gitMajor: sampleGitMajor, gitMinor: sampleGitMinor, cold: "~15 minutes",
	})
}

// kubeProgram is a program built from Kubernetes' modules.
type kubeProgram struct {
	what  string   // for the log
	dir   string   // its module
	files []string // in dir: what it is built from
	pkg   string   // the package to build, in dir's module
	name  string   // of the binary in the cache, before the files' hash
	// gitVersion, gitMajor and gitMinor are the Kubernetes version
	// k8s.io/component-base/version reports (/version).
	gitVersion, gitMajor, gitMinor string
	cold                           string // how long a cold build takes
}

// kubeProgram builds p, stripped and with its version string, once per
// content of its files and Go version, into the cache.
func (b *builder) kubeProgram(p kubeProgram) (string, error) {
	key, err := hashFiles(p.dir, p.files...)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(b.cache, p.name+"-"+key)
	if _, err := os.Stat(bin); err == nil {
		b.logf("%s: cached %s", p.what, bin)
		return bin, nil
	}
	b.logf("building %s (a cold build takes %s; cached afterwards)", p.what, p.cold)
	ldflags := stripLinkerFlag +
		" -X k8s.io/component-base/version.gitVersion=" + p.gitVersion +
		" -X k8s.io/component-base/version.gitMajor=" + p.gitMajor +
		" -X k8s.io/component-base/version.gitMinor=" + p.gitMinor +
		" -X k8s.io/component-base/version.gitTreeState=clean"
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	if err := b.goBuild(p.dir, []string{"GOWORK=off"}, "-mod=readonly", "-ldflags="+ldflags, "-o", tmp, p.pkg); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("caching the %s binary: %w", p.what, err)
	}
	return bin, nil
}

// buildPair builds what a mode with the peer of key peerKey runs: etcd,
// apikit's server (-wardle-bin, or what apikit builds) and the peer's, but
// the server -only leaves out (-only apikit needs no 20-minute build of
// the peer to try something on apikit's side); and inspects the servers.
func (b *builder) buildPair(o options, peerKey string, apikit, peer func() (string, error)) (binaries, map[string]string, map[string]binaryInfo, error) {
	var bins binaries
	var err error
	if bins.etcd, err = b.etcd(); err != nil {
		return bins, nil, nil, err
	}
	if bins.etcdVersion, err = etcdVersion(bins.etcd); err != nil {
		return bins, nil, nil, err
	}
	progs := map[string]string{}
	if o.only != keyApikit {
		if progs[peerKey], err = peer(); err != nil {
			return bins, nil, nil, err
		}
	}
	if o.only != peerKey {
		progs[keyApikit] = o.wardleBin
		if o.wardleBin == "" {
			if progs[keyApikit], err = apikit(); err != nil {
				return bins, nil, nil, err
			}
		}
	}
	infos := map[string]binaryInfo{}
	for key, bin := range progs {
		if infos[key], err = inspect(bin); err != nil {
			return bins, nil, nil, err
		}
	}
	return bins, progs, infos, nil
}

// etcd returns the etcd server tools/etcd pins, built into the cache the
// tests use (internal/etcdtest), so tests and benchmarks share one build.
func (b *builder) etcd() (string, error) {
	return etcdtest.BuildBinary(b.logf)
}

// hashFiles is a short hash of the named files in dir and the Go version.
func hashFiles(dir string, names ...string) (string, error) {
	h := sha256.New()
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return "", fmt.Errorf("hashing the sources of %s: %w", dir, err)
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", n, err)
		}
		h.Write([]byte{0})
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h.Write(goVersion)
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// etcdVersion is the version `etcd --version` reports.
func etcdVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s --version printed no version:\n%s", bin, out)
}

// binaryInfo is what the benchmark reports of a built program.
type binaryInfo struct {
	size    int64 // bytes, stripped
	modules int   // modules linked in: `go version -m` dep lines
}

// inspect measures a binary's size and counts its modules.
func inspect(bin string) (binaryInfo, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return binaryInfo{}, fmt.Errorf("binary size: %w", err)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return binaryInfo{}, fmt.Errorf("go version -m %s: %w", bin, err)
	}
	return binaryInfo{size: fi.Size(), modules: countModules(out)}, nil
}

// countModules counts the dependency modules in `go version -m` output: its
// "dep" lines (a replaced module is one "dep" line followed by a "=>" line).
func countModules(goVersionM []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(goVersionM))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "dep" {
			n++
		}
	}
	return n
}

// logger writes the benchmark's progress to stderr.
var logger = log.New(os.Stderr, "bench: ", log.Ltime)
