package etcdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Cluster is an etcd cluster of member processes on loopback, for tests
// that kill, freeze and restart members. Its members are stopped, by their
// process ids, when the test ends.
type Cluster struct {
	Members []*Member
}

// Member is one etcd process of a Cluster.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string

	t       testing.TB
	bin     string
	dataDir string
	logPath string
	cluster string // the --initial-cluster value

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool // SIGSTOPped and not continued yet
}

// StartCluster starts an etcd cluster of n members (with fsync, as a
// production cluster runs) and waits until it has a leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	ports, err := FreePorts(2 * n)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	dir := t.TempDir()
	c := &Cluster{}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			t:         t,
			bin:       bin,
		}
		m.dataDir = filepath.Join(dir, m.Name)
		m.logPath = filepath.Join(dir, m.Name+".log")
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.cluster = strings.Join(initial, ",")
		if err := m.start("new"); err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.Kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("etcdtest: the cluster elected no leader: %v", err)
	}
	return c
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Leader returns the member that is the leader, asking the running members
// until one names a leader or ctx ends.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	for {
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			if leader, ok := c.askLeader(ctx, m); ok {
				return leader, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) askLeader(ctx context.Context, m *Member) (*Member, bool) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := cl.Status(ctx, m.ClientURL)
	if err != nil || st.Leader == 0 {
		return nil, false
	}
	members, err := cl.MemberList(ctx)
	if err != nil {
		return nil, false
	}
	for _, mm := range members.Members {
		if mm.ID != st.Leader {
			continue
		}
		for _, cm := range c.Members {
			if cm.Name == mm.Name {
				return cm, true
			}
		}
	}
	return nil, false
}

// Followers returns the running members other than leader.
func (c *Cluster) Followers(leader *Member) []*Member {
	var fs []*Member
	for _, m := range c.Members {
		if m != leader && m.Running() {
			fs = append(fs, m)
		}
	}
	return fs
}

func (m *Member) start(state string) error {
	logFile, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("creating the log of %s: %w", m.Name, err)
	}
	cmd := exec.Command(m.bin,
		"--name="+m.Name,
		"--data-dir="+m.dataDir,
		"--listen-client-urls="+m.ClientURL,
		"--advertise-client-urls="+m.ClientURL,
		"--listen-peer-urls="+m.PeerURL,
		"--initial-advertise-peer-urls="+m.PeerURL,
		"--initial-cluster="+m.cluster,
		"--initial-cluster-state="+state,
		"--log-level=warn",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", m.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited, m.stopped = cmd, exited, false
	m.mu.Unlock()
	return nil
}

// Running reports whether the member's process is running (frozen counts
// as not running).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.stopped {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill ends the member with SIGKILL and waits for it to exit.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	m.mu.Lock()
	if m.cmd == cmd {
		m.cmd = nil
	}
	m.mu.Unlock()
}

// Freeze stops the member with SIGSTOP: it keeps its sockets but answers
// nothing until Thaw.
func (m *Member) Freeze() {
	m.signal(syscall.SIGSTOP, true)
}

// Thaw continues a frozen member with SIGCONT.
func (m *Member) Thaw() {
	m.signal(syscall.SIGCONT, false)
}

func (m *Member) signal(sig syscall.Signal, stopped bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
		m.stopped = stopped
	}
}

// Restart starts a killed member again on its data and waits until it is
// healthy.
func (m *Member) Restart(ctx context.Context) error {
	m.Kill()
	if err := m.start("existing"); err != nil {
		return err
	}
	for !healthy(m.ClientURL) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy after its restart: %w\n%s", m.Name, ctx.Err(), tail(m.logPath, 20))
		case <-m.exited:
			return fmt.Errorf("%s exited after its restart:\n%s", m.Name, tail(m.logPath, 20))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
