package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/test/testkit"
)

// The floor scenario (-scenarios floor) weighs the proxied upload (POST /api/apps/upload, what
// Zealot's clients use) against the least it can cost: the SHA-256 the service must compute of
// every byte, measured in the same process and the same minutes, and a direct PUT of the same
// bytes into the same store. It writes the report's "Proxied upload at the floor" section alone:
//
//	bash test/with-services.sh go run ./test/bench -scenarios floor -runs 5 -out docs/benchmarks.md
//
// Each round uploads the package through the server with a Content-Length (fastlane, curl -F)
// and chunked (a client streaming from a pipe), puts it directly into the store, and hashes it
// once in this process; with -compare-bin a second server (another build) takes the same uploads
// in the same rounds. Memory at rest is VmRSS of a fresh server a second after it is ready and
// after seven uploads.
const (
	floorBegin = "<!-- floor:begin (written by test/bench -scenarios floor) -->"
	floorEnd   = "<!-- floor:end -->"
	// Targets: server CPU per GiB against SHA-256's, and time against a direct PUT.
	floorTargetS3    = 1.5
	floorTargetFS    = 1.3
	floorTargetRatio = 0.92
	// floorUploads is how many uploads the memory figure follows.
	floorUploads = 7
	// floorIdle is how long after the last upload the second at-rest figure is read.
	floorIdle = 15 * time.Second
)

// floorResult is one run of the floor scenario.
type floorResult struct {
	Command               string
	Started               time.Time
	Took                  time.Duration
	Machine               machine
	LoadBefore, LoadAfter string
	Size                  int64
	// SHA256 is the CPU time of hashing the package once in this process, per round.
	SHA256   []time.Duration
	Backends []*floorBackend
}

// floorBackend is one storage backend's figures.
type floorBackend struct {
	Name       string
	Kind       backendKind
	DirectName string
	Direct     []timedRun
	// Floor is the minimal proxy's runs (floorproxy.go): read, SHA-256, write, nothing else.
	FloorName string
	Floor     []timedRun
	Servers   []*floorServer
}

// floorServer is one server binary's figures on a backend.
type floorServer struct {
	Label       string
	CL, Chunked []timedRun
	// Memory of a fresh process: a second after it answered, a second after floorUploads
	// uploads, and floorIdle after them.
	AtStart, After, AfterIdle memory
	Profile                   *profileResult
}

// sha256CPU is the CPU time this thread takes to hash data in 256 KiB writes (as the server's
// 256 KiB reads deliver them).
func sha256CPU(data []byte) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	h := sha256.New()
	t0 := threadCPU()
	for off := 0; off < len(data); off += 256 << 10 {
		h.Write(data[off:min(off+256<<10, len(data))])
	}
	_ = h.Sum(nil)
	return threadCPU() - t0
}

func runFloor(ctx context.Context, o options, command string) (*floorResult, error) {
	started := time.Now()
	res := &floorResult{Command: command, Started: started.UTC(), Machine: describeMachine(), LoadBefore: loadAvg()}
	e, err := newEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res.Machine.Postgres, res.Machine.MinIO = e.pgVersion, e.minioVersion
	res.Size = e.pkg.Size
	data, err := os.ReadFile(e.ipa)
	if err != nil {
		return nil, err
	}
	for _, b := range strings.Split(o.backends, ",") {
		var kind backendKind
		switch strings.TrimSpace(b) {
		case "s3":
			kind = backendS3
		case "fs":
			kind = backendFS
		case "":
			continue
		default:
			return nil, fmt.Errorf("-backends: unknown backend %q (want s3 or fs)", b)
		}
		fb, err := e.floorBackend(ctx, kind, data, res)
		if err != nil {
			return nil, err
		}
		res.Backends = append(res.Backends, fb)
	}
	res.LoadAfter = loadAvg()
	res.Took = time.Since(started)
	return res, nil
}

func (e *env) floorBackend(ctx context.Context, kind backendKind, data []byte, res *floorResult) (*floorBackend, error) {
	fb := &floorBackend{Kind: kind}
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	var (
		storageURL string
		direct     func(ctx context.Context, key string) error
		cleanup    func()
		floorDir   string
		presign    func(ctx context.Context, size int64) (string, error)
		// dropStored deletes what the uploads stored, after each: every write then finds the
		// page cache as the last one left it (on a fresh VM, a write into memory the guest has
		// never touched costs several times one into memory it has; the filesystem figures
		// varied threefold with the order of the runs before this).
		dropStored func()
	)
	switch kind {
	case backendS3:
		fb.Name, fb.DirectName = "S3 (MinIO on loopback)", "direct PutObject"
		fb.FloorName = "read, SHA-256, one streamed PUT to S3"
		storageURL = e.s3StorageURL()
		direct = func(ctx context.Context, key string) error {
			_, err := e.directPut(ctx, e.ipa, key)
			return err
		}
		presign = func(ctx context.Context, size int64) (string, error) {
			req, err := awss3.NewPresignClient(e.s3).PresignPutObject(ctx, &awss3.PutObjectInput{
				Bucket: &e.bucket, Key: aws.String("direct/floor-" + testkit.RandomHex(8)), ContentLength: aws.Int64(size)})
			if err != nil {
				return "", err
			}
			return req.URL, nil
		}
		dropStored = func() {
			if err := e.emptyBucket(ctx, uploads.PackagePrefix+"/"); err != nil {
				log.Printf("deleting the uploaded packages: %v", err)
			}
		}
		cleanup = func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.emptyBucket(cctx, ""); err != nil {
				log.Printf("emptying the bucket: %v", err)
			}
		}
	case backendFS:
		fb.Name, fb.DirectName = "filesystem", "blob/fs Put (write, fsync, rename)"
		fb.FloorName = "read, SHA-256, write to a file (fsync)"
		root, directRoot := filepath.Join(e.tmp, "fs-objects"), filepath.Join(e.tmp, "fs-direct")
		floorDir = filepath.Join(e.tmp, "fs-floor")
		for _, d := range []string{root, directRoot, floorDir} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return nil, err
			}
		}
		storageURL = (&url.URL{Scheme: "file", Path: root}).String()
		fsStore, err := fsBackend(directRoot)
		if err != nil {
			return nil, err
		}
		direct = func(ctx context.Context, key string) error {
			defer fsStore.Delete(context.Background(), key)
			_, err := directStore(ctx, fsStore, e.ipa, key)
			return err
		}
		dropStored = func() { os.RemoveAll(filepath.Join(root, uploads.PackagePrefix)) }
		cleanup = func() { os.RemoveAll(root); os.RemoveAll(directRoot); os.RemoveAll(floorDir) }
	}
	defer cleanup()
	log.Printf("== floor: %s", fb.Name)
	token, err := e.createToken(ctx, storageURL, "bench")
	if err != nil {
		return nil, err
	}
	pkg := openFile(e.ipa)
	measure := func(pid int, f func() error) (timedRun, error) {
		// What the run before wrote and deleted goes to disk first, so that this run does not
		// pay for it (the root filesystem here is mounted with discard: the first write after
		// the deletes of a round measured up to 1.7 times the others).
		syscall.Sync()
		time.Sleep(300 * time.Millisecond)
		s0, sw0 := schedStat(pid)
		m0, c0, io0 := cpuTime(e.minioPID), selfCPU(), readSyscalls(pid)
		start := time.Now()
		err := f()
		took := time.Since(start)
		io1 := readSyscalls(pid)
		s1, sw1 := schedStat(pid)
		return timedRun{Took: took, CPU: cpuSample{Server: s1 - s0, MinIO: cpuTime(e.minioPID) - m0, Client: selfCPU() - c0},
			Switches: sw1 - sw0,
			Syscalls: syscalls{Reads: io1.Reads - io0.Reads, Writes: io1.Writes - io0.Writes,
				ReadBytes: io1.ReadBytes - io0.ReadBytes, WriteBytes: io1.WriteBytes - io0.WriteBytes}}, err
	}
	fp, err := startFloorProxy(floorDir, presign)
	if err != nil {
		return nil, err
	}
	defer fp.stop()
	if err := direct(ctx, "warmup/"+testkit.RandomHex(4)); err != nil {
		return nil, err
	}

	bins := []struct{ label, bin string }{{"this build", e.bin}}
	if e.opts.compareBin != "" {
		bins = append(bins, struct{ label, bin string }{"-compare-bin", e.opts.compareBin})
	}
	type running struct {
		srv        *server
		cl, chunks *uploadClient
	}
	var servers []running
	for i, b := range bins {
		fs := &floorServer{Label: b.label}
		fb.Servers = append(fb.Servers, fs)
		srv, err := e.startBinary(ctx, b.bin, storageURL, fmt.Sprintf("floor-%d-%d", kind, i))
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		if err := waitReady(ctx, srv.url); err != nil {
			return nil, err
		}
		settle()
		if fs.AtStart, err = readMemory(srv.pid); err != nil {
			return nil, err
		}
		cl := newUploadClient(srv.url, token)
		chunks := newUploadClient(srv.url, token)
		chunks.chunked = true
		servers = append(servers, running{srv, cl, chunks})
	}
	// Memory: each fresh server takes floorUploads uploads (Content-Length and chunked in turn);
	// they also warm it up for the timed rounds.
	for i, s := range servers {
		for j := range floorUploads {
			c := s.cl
			if j%2 == 1 {
				c = s.chunks
			}
			if _, _, err := c.upload(ctx, pkg, map[string]string{"changelog": "warm-up"}); err != nil {
				return nil, err
			}
		}
		settle()
		var err error
		if fb.Servers[i].After, err = readMemory(s.srv.pid); err != nil {
			return nil, err
		}
	}
	time.Sleep(floorIdle - time.Second)
	for i, s := range servers {
		var err error
		if fb.Servers[i].AfterIdle, err = readMemory(s.srv.pid); err != nil {
			return nil, err
		}
	}
	dropStored()
	for round := range e.opts.runs {
		log.Printf("floor round %d/%d (%s)", round+1, e.opts.runs, fb.Name)
		if len(res.Backends) == 0 { // the first backend's rounds
			res.SHA256 = append(res.SHA256, sha256CPU(data))
		}
		for i, s := range servers {
			for _, c := range []*uploadClient{s.cl, s.chunks} {
				run, err := measure(s.srv.pid, func() error {
					_, _, err := c.upload(ctx, pkg, map[string]string{"changelog": "floor", "release_type": "adhoc"})
					return err
				})
				if err != nil {
					return nil, err
				}
				dropStored()
				if c.chunked {
					fb.Servers[i].Chunked = append(fb.Servers[i].Chunked, run)
				} else {
					fb.Servers[i].CL = append(fb.Servers[i].CL, run)
				}
			}
		}
		run, err := measure(0, func() error { return direct(ctx, "direct/"+testkit.RandomHex(8)) })
		if err != nil {
			return nil, err
		}
		fb.Direct = append(fb.Direct, run)
		if kind == backendS3 {
			_ = e.emptyBucket(ctx, "direct/")
		}
		if run, err = measure(fp.pid(), func() error { return fp.send(ctx, data) }); err != nil {
			return nil, fmt.Errorf("the floor proxy: %w", err)
		}
		fb.Floor = append(fb.Floor, run)
		if kind == backendS3 {
			_ = e.emptyBucket(ctx, "direct/")
		}
	}
	if e.opts.profile == "on" {
		for i, s := range servers {
			fb.Servers[i].Profile = e.profileUpload(ctx, s.srv, s.cl, pkg)
		}
	}
	return fb, ctx.Err()
}

// --- the section -----------------------------------------------------------------------------

func medianDur(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// perGiB is d per GiB of size bytes, in seconds.
func perGiB(d time.Duration, size int64) float64 { return d.Seconds() * (1 << 30) / float64(size) }

func (r *floorResult) shaPerGiB() float64 { return perGiB(medianDur(r.SHA256), r.Size) }

// floorRow is one client kind's figures through one server.
type floorRow struct {
	client                             string
	cpuGiB, ratioSHA, vsDirect, best   float64
	minioGiB                           float64
	took                               time.Duration
	reads, writes, readBytes, writeBys int64
	switches                           int64
}

func (r *floorResult) row(fb *floorBackend, client string, runs []timedRun) floorRow {
	var cpu, minio []time.Duration
	var switches []int64
	for _, x := range runs {
		cpu, minio, switches = append(cpu, x.CPU.Server), append(minio, x.CPU.MinIO), append(switches, x.Switches)
	}
	m, d := medianRun(runs), medianRun(fb.Direct)
	slices.Sort(switches)
	row := floorRow{client: client, cpuGiB: perGiB(medianDur(cpu), r.Size), minioGiB: perGiB(medianDur(minio), r.Size), took: m.Took}
	if len(switches) > 0 {
		row.switches = switches[len(switches)/2]
	}
	row.ratioSHA = row.cpuGiB / r.shaPerGiB()
	if m.Took > 0 {
		row.vsDirect = d.Took.Seconds() / m.Took.Seconds()
		row.best = bestRun(fb.Direct).Took.Seconds() / bestRun(runs).Took.Seconds()
	}
	sc := medianSyscalls(runs)
	row.reads, row.writes = sc.Reads, sc.Writes
	var rb, wb []int64
	for _, x := range runs {
		rb, wb = append(rb, x.Syscalls.ReadBytes), append(wb, x.Syscalls.WriteBytes)
	}
	slices.Sort(rb)
	slices.Sort(wb)
	if len(rb) > 0 {
		row.readBytes, row.writeBys = rb[len(rb)/2], wb[len(wb)/2]
	}
	return row
}

func perCall(bytes, calls int64) string {
	if calls == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f KiB", float64(bytes)/float64(calls)/(1<<10))
}

func (r *floorResult) summary() string {
	var s strings.Builder
	fmt.Fprintf(&s, "\nproxied upload at the floor (%d rounds, medians): SHA-256 %.3f CPU-s/GiB\n", len(r.SHA256), r.shaPerGiB())
	for _, fb := range r.Backends {
		floor := r.row(fb, fb.FloorName, fb.Floor)
		fmt.Fprintf(&s, "  %-22s floor: %s: %.3f CPU-s/GiB = %.2f× SHA-256, %.3f of direct, %d switches, MinIO %.3f CPU-s/GiB\n", fb.Name, fb.FloorName, floor.cpuGiB, floor.ratioSHA, floor.vsDirect, floor.switches, floor.minioGiB)
		direct := r.row(fb, fb.DirectName, fb.Direct)
		fmt.Fprintf(&s, "  %-22s %s: %s, MinIO %.3f CPU-s/GiB\n", fb.Name, fb.DirectName, fmtSec(direct.took), direct.minioGiB)
		for _, srv := range fb.Servers {
			for _, c := range []struct {
				name string
				runs []timedRun
			}{{"Content-Length", srv.CL}, {"chunked", srv.Chunked}} {
				row := r.row(fb, c.name, c.runs)
				fmt.Fprintf(&s, "  %-22s %-12s %-15s %.3f CPU-s/GiB = %.2f× SHA-256 = %.2f× floor, %.3f of direct (best %.3f), reads %d (%s), writes %d (%s), %d switches, MinIO %.3f CPU-s/GiB\n",
					fb.Name, srv.Label, c.name, row.cpuGiB, row.ratioSHA, row.cpuGiB/floor.cpuGiB, row.vsDirect, row.best,
					row.reads, perCall(row.readBytes, row.reads), row.writes, perCall(row.writeBys, row.writes), row.switches, row.minioGiB)
				fmt.Fprintf(&s, "  %-22s %-12s %-15s rounds (CPU-s/GiB):", "", "", "")
				for _, x := range c.runs {
					fmt.Fprintf(&s, " %.3f", perGiB(x.CPU.Server, r.Size))
				}
				fmt.Fprintln(&s)
			}
			fmt.Fprintf(&s, "  %-22s %-12s RSS at start %.1f MiB, after %d uploads %.1f MiB, %s later %.1f MiB\n", fb.Name, srv.Label,
				float64(srv.AtStart.RSS)/(1<<20), floorUploads, float64(srv.After.RSS)/(1<<20), floorIdle, float64(srv.AfterIdle.RSS)/(1<<20))
		}
	}
	return s.String()
}

func (r *floorResult) section() string {
	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	p("%s\n## Proxied upload at the floor\n\n", floorBegin)
	p("Generated by `%s` on %s UTC (commit %s, %s, %d cores; load average %s before, %s after; it took %s). %d rounds; each uploads the %.0f MiB package through `POST /api/apps/upload` with a Content-Length (as fastlane and `curl -F` send it) and chunked (no length, as a client streaming from a pipe sends it; Go's client makes chunks of 32 KiB), puts the same file directly into the same store, and hashes it once with SHA-256 in the benchmark's process (256 KiB writes, one thread's CPU time from getrusage). Medians of the rounds. Server CPU is the server process's scheduler time during the upload (/proc/<pid>/task/*/schedstat), its system calls and their bytes from /proc/<pid>/io.\n\n",
		r.Command, r.Started.Format("2006-01-02 15:04"), r.Machine.Slipway, r.Machine.CPU, r.Machine.Cores, r.LoadBefore, r.LoadAfter, r.Took.Round(time.Second),
		len(r.SHA256), float64(r.Size)/(1<<20))
	p("SHA-256 on this machine, in this run: **%.3f CPU-s per GiB** (rounds: ", r.shaPerGiB())
	for i, d := range r.SHA256 {
		if i > 0 {
			p(", ")
		}
		p("%.3f", perGiB(d, r.Size))
	}
	p(").\n\n")
	p("The floor rows are a minimal proxy (`test/bench/floorproxy.go`, a process of its own): it reads the bytes from a socket in reads of up to 1 MiB, hashes them with SHA-256 and writes them on as they come, to MinIO in one PUT (to a presigned URL: no signing, no parts) or to a file it fsyncs, and does nothing else; what it costs is what moving and hashing the bytes costs on this machine, with the same store at the other end, measured in the same rounds. \"÷ floor\" is the server's CPU against it. Context switches are the times the scheduler put one of the process's threads on a CPU (schedstat). MinIO's CPU per GiB is what the store took for the same bytes: on 2 cores it decides the upload time, since MinIO, the client and the server share them.\n\n")
	p("| Backend | Server | Client | Server CPU per GiB | ÷ SHA-256 | Target | ÷ floor | Upload time (median) | Direct PUT ÷ upload (medians) | (best runs) | Read syscalls | Bytes per read | Write syscalls | Bytes per write | Context switches | MinIO CPU per GiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, fb := range r.Backends {
		target := floorTargetS3
		if fb.Kind == backendFS {
			target = floorTargetFS
		}
		floor := r.row(fb, fb.FloorName, fb.Floor)
		minio := func(row floorRow) string {
			if fb.Kind != backendS3 {
				return "–"
			}
			return fmt.Sprintf("%.3f s", row.minioGiB)
		}
		for _, srv := range fb.Servers {
			for _, c := range []struct {
				name string
				runs []timedRun
			}{{"Content-Length", srv.CL}, {"chunked", srv.Chunked}} {
				row := r.row(fb, c.name, c.runs)
				verdict := "**PASS**"
				if row.ratioSHA > target {
					verdict = "**MISS**"
				}
				rv := fmt.Sprintf("%.3f", row.vsDirect)
				if row.vsDirect < floorTargetRatio {
					rv += " (below 0.92)"
				}
				p("| %s | %s | %s | %.3f s | %.2f× | ≤ %.1f× %s | %.2f× | %s | %s | %.3f | %d | %s | %d | %s | %d | %s |\n", fb.Name, srv.Label, c.name, row.cpuGiB, row.ratioSHA, target, verdict,
					row.cpuGiB/floor.cpuGiB, fmtSec(row.took), rv, row.best, row.reads, perCall(row.readBytes, row.reads), row.writes, perCall(row.writeBys, row.writes),
					row.switches, minio(row))
			}
		}
		p("| %s | floor | %s | %.3f s | %.2f× | – | 1.00× | %s | %.3f | | %d | %s | %d | %s | %d | %s |\n", fb.Name, fb.FloorName, floor.cpuGiB, floor.ratioSHA,
			fmtSec(floor.took), floor.vsDirect, floor.reads, perCall(floor.readBytes, floor.reads), floor.writes, perCall(floor.writeBys, floor.writes), floor.switches, minio(floor))
		direct := r.row(fb, fb.DirectName, fb.Direct)
		p("| %s | – | %s | – | – | – | – | %s | 1.000 | | | | | | | %s |\n", fb.Name, fb.DirectName, fmtSec(direct.took), minio(direct))
	}
	p("\nServer memory at rest (VmRSS of a fresh process, a second after /readyz answers 200, after the uploads, and later; the %d uploads alternate the two clients):\n\n", floorUploads)
	p("| Backend | Server | 1 s after ready | 1 s after %d uploads | %s after them | Peak (VmHWM) |\n|---|---|---|---|---|---|\n", floorUploads, floorIdle)
	for _, fb := range r.Backends {
		for _, srv := range fb.Servers {
			p("| %s | %s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB |\n", fb.Name, srv.Label, float64(srv.AtStart.RSS)/(1<<20),
				float64(srv.After.RSS)/(1<<20), float64(srv.AfterIdle.RSS)/(1<<20), float64(srv.AfterIdle.HWM)/(1<<20))
		}
	}
	p("\n")
	for _, fb := range r.Backends {
		for _, srv := range fb.Servers {
			if srv.Profile == nil {
				continue
			}
			var pw strings.Builder
			(&report{}).writeProfile(func(f string, a ...any) { fmt.Fprintf(&pw, f, a...) }, fb.Name+", "+srv.Label+", Content-Length", srv.Profile)
			p("%s", strings.Replace(pw.String(), "## Profile", "### Profile", 1))
		}
	}
	p("%s\n", floorEnd)
	return w.String()
}

// writeFloorSection puts the section into the report at path (writeMarkedSection).
func writeFloorSection(path, section string) error {
	return writeMarkedSection(path, section, floorBegin, floorEnd)
}

// keptFloorSection is the floor section of the report s, markers and newline included, or "".
func keptFloorSection(s string) string { return markedSection(s, floorBegin, floorEnd) }

// waitReady waits until the server's /readyz answers 200: start-up (the schema check) is over.
func waitReady(ctx context.Context, base string) error {
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/readyz did not answer 200 within a minute", base)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
