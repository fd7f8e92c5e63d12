package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// profileResult is a perf profile of the server during one upload.
type profileResult struct {
	Took     time.Duration
	CPU      cpuSample
	Self     string // flat profile: where the CPU time is spent
	Children string // cumulative: which callers it is spent under
	Err      string // why there is no profile
}

// profileUpload records the server with `perf record -g` (frame pointers) during one more upload
// and keeps the top of perf report, flat and cumulative. The profile is of the real server
// process, not an in-process imitation.
func (e *env) profileUpload(ctx context.Context, srv *server, c *uploadClient, pkg func() (io.ReadCloser, int64, error)) *profileResult {
	p := &profileResult{}
	perf, err := exec.LookPath("perf")
	if err != nil {
		p.Err = "perf is not installed"
		return p
	}
	data := filepath.Join(e.tmp, "perf.data")
	log.Printf("profiling one upload with perf (server pid %d)", srv.pid)
	rec := exec.Command(perf, "record", "-F", "999", "-g", "-p", fmt.Sprint(srv.pid), "-o", data)
	var recErr bytes.Buffer
	rec.Stdout, rec.Stderr = &recErr, &recErr
	if err := rec.Start(); err != nil {
		p.Err = "perf record: " + err.Error()
		return p
	}
	time.Sleep(500 * time.Millisecond)
	s0, m0, c0 := cpuTime(srv.pid), cpuTime(e.minioPID), selfCPU()
	start := time.Now()
	_, _, uerr := c.upload(ctx, pkg, map[string]string{"changelog": "profiled upload"})
	p.Took = time.Since(start)
	p.CPU = cpuSample{Server: cpuTime(srv.pid) - s0, MinIO: cpuTime(e.minioPID) - m0, Client: selfCPU() - c0}
	_ = rec.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- rec.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = rec.Process.Kill()
		<-done
	}
	if uerr != nil {
		p.Err = "profiled upload failed: " + uerr.Error()
		return p
	}
	if _, err := os.Stat(data); err != nil {
		p.Err = "perf record wrote no data: " + strings.TrimSpace(recErr.String())
		return p
	}
	report := func(args ...string) string {
		cmd := exec.Command(perf, append([]string{"report", "-i", data, "--stdio", "--sort", "sym", "-g", "none"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			return "perf report: " + err.Error()
		}
		var keep []string
		for _, l := range strings.Split(string(out), "\n") {
			if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			keep = append(keep, strings.TrimRight(l, " "))
			if len(keep) == 30 {
				break
			}
		}
		return strings.Join(keep, "\n")
	}
	p.Self = report("--no-children", "--percent-limit", "0.7")
	p.Children = report("--children", "--percent-limit", "4")
	return p
}
