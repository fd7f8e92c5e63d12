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
	Took    time.Duration
	CPU     cpuSample
	Self    string       // flat profile: where the CPU time is spent
	Centres []costCentre // cumulative share of chosen functions
	Err     string       // why there is no profile
}

// costCentre is the share of the server's CPU samples spent in (or under) one function.
type costCentre struct {
	What, Symbol string
	Percent      float64
}

// costCentres are the functions whose cumulative share explains an upload's CPU.
var costCentres = []struct{ what, symbol string }{
	{"reading the request: mime/multipart part reads (socket reads and boundary scan included)", "mime/multipart.partReader.Read"},
	{"reading the request: formdata part reads (socket reads straight into the part buffers, boundary scan)", "github.com/slipwayhq/slipway/pkg/formdata.partReader.Read"},
	{"boundary scan (formdata)", "github.com/slipwayhq/slipway/pkg/formdata.scanUntilBoundary"},
	{"socket reads (read syscalls)", "internal/poll.(*FD).Read"},
	{"read-deadline updates before each body read", "net/http.(*ResponseController).SetReadDeadline"},
	{"SHA-256 and the kept tail (io.MultiWriter)", "io.(*multiWriter).Write"},
	{"SHA-256 alone", "crypto/internal/fips140/sha256.(*Digest).Write"},
	{"sending parts to S3: the HTTP client's write loop (socket writes)", "net/http.(*persistConn).writeLoop"},
	{"socket writes (write syscalls, S3 parts or files)", "internal/poll.(*FD).Write"},
	{"memory copies (runtime.memmove)", "runtime.memmove"},
	{"parsing the package (appinfo.Parse, ranged GETs included)", "github.com/slipwayhq/slipway/pkg/appinfo.Parse"},
	{"memory allocation (runtime.mallocgc)", "runtime.mallocgc"},
	{"garbage collection (background mark workers)", "runtime.gcBgMarkWorker"},
	{"scheduler (runtime.schedule: goroutine switches)", "runtime.schedule"},
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
	out, err := exec.Command(perf, "report", "-i", data, "--stdio", "--children", "--sort", "sym", "-g", "none", "--percent-limit", "0").Output()
	if err != nil {
		p.Err = "perf report: " + err.Error()
		return p
	}
	children := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		// "   72.23%     0.15%  [.] symbol"
		if len(f) < 4 || !strings.HasSuffix(f[0], "%") || !strings.HasPrefix(f[2], "[") {
			continue
		}
		var pct float64
		if _, err := fmt.Sscanf(f[0], "%f%%", &pct); err != nil {
			continue
		}
		sym := strings.Join(f[3:], " ")
		children[sym] = max(children[sym], pct)
	}
	for _, c := range costCentres {
		p.Centres = append(p.Centres, costCentre{What: c.what, Symbol: c.symbol, Percent: children[c.symbol]})
	}
	return p
}
