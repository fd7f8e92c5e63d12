package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slipwayhq/slipway/test/testkit"
)

// server is a `slipway serve` child process on a loopback port.
type server struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	logPath string
	exited  chan struct{}
	waitErr error
}

// serverEnviron is the environment of slipway processes: the caller's, without SLIPWAY_* and
// AWS_* variables, plus the benchmark's database, storage and credentials.
func (e *env) serverEnviron(storageURL, addr string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLIPWAY_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"SLIPWAY_ADDR="+addr,
		"SLIPWAY_PUBLIC_URL=http://"+addr,
		"SLIPWAY_DATABASE_URL="+e.dbURL,
		"SLIPWAY_STORAGE_URL="+storageURL,
		"SLIPWAY_SECRET=slipway-benchmark-secret-0123456789abcdef",
		"SLIPWAY_GC_INTERVAL=0", // no collector run in the middle of a measurement
		"AWS_ACCESS_KEY_ID="+e.s3Access,
		"AWS_SECRET_ACCESS_KEY="+e.s3Secret,
		"AWS_REGION="+e.s3Region,
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// startServer starts a fresh `slipway serve` and waits until /healthz answers.
func (e *env) startServer(ctx context.Context, storageURL, label string, extraEnv ...string) (*server, error) {
	return e.startBinary(ctx, e.bin, storageURL, label, extraEnv...)
}

// startBinary starts `bin serve` (the benchmark's binary, or -compare-bin).
func (e *env) startBinary(ctx context.Context, bin, storageURL, label string, extraEnv ...string) (*server, error) {
	port, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &server{url: "http://" + addr, logPath: filepath.Join(e.tmp, "serve-"+label+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(e.serverEnviron(storageURL, addr), extraEnv...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting slipway serve: %w", err)
	}
	s.pid = s.cmd.Process.Pid
	go func() {
		s.waitErr = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("slipway serve exited (%v):\n%s", s.waitErr, tailOf(s.logPath, 2000))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("slipway serve did not answer /healthz in 60s:\n%s", tailOf(s.logPath, 2000))
		}
	}
	return s, nil
}

// stop sends SIGTERM to the server it started and waits for it (SIGKILL after 40 s).
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(40 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// createToken creates an upload token with the CLI, as an operator would (after `slipway
// migrate up`: token create migrates nothing); the token is the last line of its output.
func (e *env) createToken(ctx context.Context, storageURL, name string) (string, error) {
	migrate := exec.CommandContext(ctx, e.bin, "migrate", "up")
	migrate.Env = e.serverEnviron(storageURL, "127.0.0.1:0")
	if out, err := migrate.CombinedOutput(); err != nil {
		return "", fmt.Errorf("slipway migrate up: %v: %s", err, out)
	}
	cmd := exec.CommandContext(ctx, e.bin, "token", "create", "--name", name, "--scope", "upload")
	cmd.Env = e.serverEnviron(storageURL, "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("slipway token create: %v: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// storedAt returns the time of the last "upload stored" line (logged at debug level when the
// upload's object is complete in storage) written to the server's log after offset, or zero.
func (s *server) storedAt(offset int64) time.Time {
	b, err := os.ReadFile(s.logPath)
	if err != nil || int64(len(b)) < offset {
		return time.Time{}
	}
	var last time.Time
	for _, line := range bytes.Split(b[offset:], []byte("\n")) {
		if !bytes.Contains(line, []byte(`"msg":"upload stored"`)) {
			continue
		}
		var rec struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(line, &rec) == nil {
			last = rec.Time
		}
	}
	return last
}

// logSize is the current size of the server's log.
func (s *server) logSize() int64 {
	st, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// memory is a process's resident set (VmRSS, VmHWM), from /proc/<pid>/status.
type memory = testkit.Memory

func readMemory(pid int) (memory, error) { return testkit.ReadMemory(pid) }

// cpuTime is the CPU time a process has used (testkit.SchedCPUTime: exact for short runs), or 0
// when the process is unknown.
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	d, _ := testkit.SchedCPUTime(pid)
	return d
}

// schedStat is cpuTime and the process's context switches (testkit.SchedStat).
func schedStat(pid int) (time.Duration, int64) {
	if pid <= 0 {
		return 0, 0
	}
	d, n, _ := testkit.SchedStat(pid)
	return d, n
}

// syscalls is the number of read and write system calls a process has made, and the bytes they
// moved (sockets, files and pipes alike), from /proc/<pid>/io.
type syscalls struct{ Reads, Writes, ReadBytes, WriteBytes int64 }

func readSyscalls(pid int) syscalls {
	if pid <= 0 {
		return syscalls{}
	}
	io, _ := testkit.ReadIO(pid)
	return syscalls{Reads: io.SyscR, Writes: io.SyscW, ReadBytes: io.RChar, WriteBytes: io.WChar}
}

// selfCPU is this process's CPU time (the benchmark clients).
func selfCPU() time.Duration { return testkit.SelfCPU() }

// scrape reads the server's Prometheus metrics: "name" or "name{labels}" → value.
func (s *server) scrape() (map[string]float64, error) {
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// tailOf returns the last n bytes of a file, for error messages.
func tailOf(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
