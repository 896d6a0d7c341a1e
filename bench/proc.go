package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the CPU time (user + system, all threads) the process has
// used so far, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of pid %d: %w", pid, err)
	}
	d, err := parseStatCPU(b)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return d, nil
}

// parseStatCPU reads utime + stime from the contents of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself hold spaces
// and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("/proc stat: no ')' after the command name")
	}
	// After ") " come fields 3 (state) onwards; utime and stime are
	// fields 14 and 15.
	f := strings.Fields(string(stat[end+1:]))
	const utime = 14 - 3
	if len(f) <= utime+1 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least %d", len(f), utime+2)
	}
	var ticks uint64
	for _, s := range f[utime : utime+2] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: utime/stime %q: %w", s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// rss is the process's resident set size in bytes, from VmRSS in
// /proc/<pid>/status.
func rss(pid int) (int64, error) { return statusKB(pid, "VmRSS") }

// statusKB reads a "<n> kB" field of /proc/<pid>/status, in bytes.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading %s of pid %d: %w", field, pid, err)
	}
	n, err := parseStatusKB(b, field)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return n, nil
}

// parseVmRSS reads the VmRSS line ("VmRSS:   123456 kB") of
// /proc/<pid>/status, in bytes.
func parseVmRSS(status []byte) (int64, error) { return parseStatusKB(status, "VmRSS") }

// parseStatusKB reads the line "<field>:   123456 kB" of /proc/<pid>/status,
// in bytes.
func parseStatusKB(status []byte, field string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status: %s %q, want \"<n> kB\"", field, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: %s: %w", field, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("/proc status: no %s line", field)
}

// process is a child process the benchmark started: it is stopped by its
// process id only.
type process struct {
	name    string
	cmd     *exec.Cmd
	log     *os.File
	logPath string
	exited  chan struct{}
	waitErr error
}

// startProcess starts bin with args, its output going to logPath. The child
// gets its own process group, so that a Ctrl-C at the terminal reaches the
// benchmark, which stops it, rather than the child directly; and SIGKILL
// when the benchmark dies without stopping it.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, log: log, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// done reports whether the process has exited.
func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace for the exit, then sends SIGKILL.
// It returns an error when the process had to be killed.
func (p *process) stop(grace time.Duration) error {
	defer p.log.Close()
	if p.done() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("%s (pid %d) did not stop within %v of SIGTERM; killed", p.name, p.pid(), grace)
}

// tail returns the last n lines of the process's output.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
