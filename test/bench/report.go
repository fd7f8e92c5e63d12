package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets of the upload path: throughput against a direct PUT, peak memory, and the storage reads
// the parse makes.
const (
	targetRatio      = 0.90
	targetRSS1       = 96 << 20
	targetRSS4       = 192 << 20
	targetParseGETs  = 6
	targetParseShare = 0.005 // of the package
)

// Target of the upload-session path against a direct PUT of the same bytes.
const targetSessionRatio = 0.97

// Targets of the read API: the update check and its neighbours against /healthz, in requests per
// second at the same concurrency.
const (
	targetLatestShare   = 0.6
	targetVersionsShare = 0.4
)

// Names of the read-API load tests.
const (
	loadHealthz      = "/healthz"
	loadLatest       = "latest"
	loadLatestSDK    = "latest (sdk)"
	loadVersions     = "versions (25 per page)"
	loadVersionExist = "version_exist"
	loadInsights     = "release insights"
	loadDiff         = "release diff"
	loadAppcast      = "Sparkle appcast"
	loadElectron     = "electron latest-mac.yml"
)

// Markers of the hand-written notes kept when the report is regenerated.
const (
	notesBegin = "<!-- notes:begin (kept by make bench) -->"
	notesEnd   = "<!-- notes:end -->"
)

type machine struct {
	CPU, Kernel, Go, Slipway, Postgres, MinIO, GOGC, GOMEMLIMIT string
	Cores                                                       int
	RAM                                                         int64
}

type report struct {
	Command               string
	Options               options
	Started               time.Time
	Took                  time.Duration
	Machine               machine
	LoadBefore, LoadAfter string
	Package               packageInfo
	Backends              []*backendResult
	// Attack is the latency-under-attack scenario; nil when it did not run (the report then keeps
	// the section the file had).
	Attack *attackResult
}

func describeMachine() machine {
	m := machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version(), GOGC: envOr("GOGC", "unset (100)"),
		GOMEMLIMIT: envOr("GOMEMLIMIT", "unset (none)")}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "MemTotal:"), "kB")), &kb)
				m.RAM = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Slipway = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			m.Slipway += " with uncommitted changes"
		}
	}
	return m
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// --- figures ---------------------------------------------------------------------------------

func medianRun(runs []timedRun) timedRun {
	if len(runs) == 0 {
		return timedRun{}
	}
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b timedRun) int { return int(a.Took - b.Took) })
	return s[len(s)/2]
}

// afterBody renders the time after the client's last byte of the median run (by that time),
// split where the object was complete in storage.
func afterBody(runs []timedRun) string {
	if len(runs) == 0 {
		return "–"
	}
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b timedRun) int { return int(a.AfterBody - b.AfterBody) })
	m := s[len(s)/2]
	if m.StoreTail == 0 || m.StoreTail > m.AfterBody {
		return fmtLat(m.AfterBody)
	}
	return fmt.Sprintf("%s / %s / %s", fmtLat(m.AfterBody), fmtLat(m.StoreTail), fmtLat(m.AfterBody-m.StoreTail))
}

func bestRun(runs []timedRun) timedRun {
	if len(runs) == 0 {
		return timedRun{}
	}
	return slices.MinFunc(runs, func(a, b timedRun) int { return int(a.Took - b.Took) })
}

// medianSyscalls is the per-kind median of the server's system calls over runs.
func medianSyscalls(runs []timedRun) syscalls {
	var r, w []int64
	for _, x := range runs {
		r, w = append(r, x.Syscalls.Reads), append(w, x.Syscalls.Writes)
	}
	if len(r) == 0 {
		return syscalls{}
	}
	slices.Sort(r)
	slices.Sort(w)
	return syscalls{Reads: r[len(r)/2], Writes: w[len(w)/2]}
}

// medianCPU is the per-process median CPU over runs.
func medianCPU(runs []timedRun) cpuSample {
	pick := func(f func(cpuSample) time.Duration) time.Duration {
		var v []time.Duration
		for _, r := range runs {
			v = append(v, f(r.CPU))
		}
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	return cpuSample{
		Server: pick(func(c cpuSample) time.Duration { return c.Server }),
		MinIO:  pick(func(c cpuSample) time.Duration { return c.MinIO }),
		Client: pick(func(c cpuSample) time.Duration { return c.Client }),
	}
}

func mibps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / (1 << 20) / d.Seconds()
}

func (r *backendResult) throughput(runs []timedRun) float64 {
	return mibps(r.Size, medianRun(runs).Took)
}

// ratio is Slipway's median throughput over the direct baseline's.
func (r *backendResult) ratio() float64 {
	d := r.throughput(r.Direct)
	if d == 0 {
		return 0
	}
	return r.throughput(r.Slipway) / d
}

// bestRatio is the ratio of the fastest runs, the least disturbed by other jobs.
func (r *backendResult) bestRatio() float64 {
	d := bestRun(r.Direct).Took
	if d == 0 {
		return 0
	}
	return d.Seconds() / bestRun(r.Slipway).Took.Seconds()
}

// cpuRatio is the throughput ratio the CPU costs predict when the cores are the bottleneck (as
// on a small shared machine): CPU per byte of the direct path over that of the Slipway path.
func (r *backendResult) cpuRatio() float64 {
	s, d := medianCPU(r.Slipway), medianCPU(r.Direct)
	total := s.Server + s.MinIO + s.Client
	if total == 0 {
		return 0
	}
	return float64(d.Server+d.MinIO+d.Client) / float64(total)
}

func (r *backendResult) parseShare() float64 {
	if r.Size == 0 {
		return 0
	}
	return r.ParseBytes / float64(r.Size)
}

// verdict compares v with a target: atLeast for ≥ targets, else ≤.
func verdict(v, target float64, atLeast bool, unit func(float64) string) string {
	pass := v <= target
	if atLeast {
		pass = v >= target
	}
	diff := v - target
	if diff < 0 {
		diff = -diff
	}
	pct := 0.0
	if target != 0 {
		pct = diff / target * 100
	}
	if pass {
		return fmt.Sprintf("**PASS** (%s of headroom, %.0f%%)", unit(diff), pct)
	}
	return fmt.Sprintf("**MISS** by %s (%.1f%%)", unit(diff), pct)
}

func fmtMiB(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
func fmtKiB(b float64) string { return fmt.Sprintf("%.0f KiB", b/(1<<10)) }
func fmtNum(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
func fmtSec(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}
func fmtLat(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

type targetRow struct{ name, measured, verdict string }

func (rep *report) targets() []targetRow {
	var rows []targetRow
	for _, b := range rep.Backends {
		if b.Kind != backendS3 {
			continue
		}
		share := func(name string) float64 {
			var healthz, rps float64
			for _, l := range b.Load {
				switch l.Name {
				case loadHealthz:
					healthz = l.RPS
				case name:
					rps = l.RPS
				}
			}
			if healthz == 0 {
				return 0
			}
			return rps / healthz
		}
		for _, t := range []struct {
			name   string
			target float64
		}{{loadLatest, targetLatestShare}, {loadLatestSDK, targetLatestShare}, {loadVersions, targetVersionsShare},
			{loadAppcast, targetLatestShare}, {loadElectron, targetLatestShare}} {
			v := share(t.name)
			rows = append(rows, targetRow{fmt.Sprintf("`%s` req/s ≥ %.1f of `/healthz`", t.name, t.target), fmt.Sprintf("%.2f", v),
				verdict(v, t.target, true, func(v float64) string { return fmt.Sprintf("%.2f", v) })})
		}
		if len(b.Session) > 0 {
			v := b.throughput(b.Session) / b.throughput(b.Direct)
			rows = append(rows, targetRow{"Upload session / direct PUT ≥ 0.97", fmt.Sprintf("%.3f", v),
				verdict(v, targetSessionRatio, true, func(v float64) string { return fmt.Sprintf("%.3f", v) })})
		}
		rows = append(rows,
			targetRow{"Upload throughput, Slipway / direct PUT ≥ 0.90", fmt.Sprintf("%.3f", b.ratio()),
				verdict(b.ratio(), targetRatio, true, func(v float64) string { return fmt.Sprintf("%.3f", v) })},
			targetRow{"Peak RSS, 1 upload ≤ 96 MiB", fmtMiB(float64(b.Peak1.HWM)),
				verdict(float64(b.Peak1.HWM), targetRSS1, false, fmtMiB)},
			targetRow{fmt.Sprintf("Peak RSS, %d concurrent uploads ≤ 192 MiB", b.Concurrency), fmtMiB(float64(b.Peak4.HWM)),
				verdict(float64(b.Peak4.HWM), targetRSS4, false, fmtMiB)},
			targetRow{"Parse: storage GETs ≤ 6", fmtNum(b.ParseGETs),
				verdict(b.ParseGETs, targetParseGETs, false, func(v float64) string { return fmtNum(v) + " GETs" })},
			targetRow{"Parse: bytes read ≤ 0.5% of the package", fmt.Sprintf("%s (%.3f%%)", fmtKiB(b.ParseBytes), b.parseShare()*100),
				verdict(b.ParseBytes, targetParseShare*float64(b.Size), false, fmtKiB)},
		)
	}
	return rows
}

// summary is the plain-text result printed at the end.
func (rep *report) summary() string {
	var s strings.Builder
	fmt.Fprintf(&s, "\nSlipway benchmark (%s, %d cores, %s; took %s)\n", rep.Machine.CPU, rep.Machine.Cores, rep.Machine.Go, rep.Took.Round(time.Second))
	fmt.Fprintf(&s, "package: %s, %d entries, central directory %s\n", fmtMiB(float64(rep.Package.Size)), rep.Package.Entries, fmtKiB(float64(rep.Package.CentralDirBytes)))
	for _, b := range rep.Backends {
		fmt.Fprintf(&s, "\n[%s]\n", b.Name)
		fmt.Fprintf(&s, "  upload through Slipway  %7.1f MiB/s (median of %d)\n", b.throughput(b.Slipway), len(b.Slipway))
		fmt.Fprintf(&s, "  %-22s  %7.1f MiB/s\n", short(b.DirectName), b.throughput(b.Direct))
		if len(b.DirectStore) > 0 {
			fmt.Fprintf(&s, "  %-22s  %7.1f MiB/s\n", short(b.DirectStoreName), b.throughput(b.DirectStore))
		}
		if len(b.Compare) > 0 {
			c, sc := medianCPU(b.Compare), medianSyscalls(b.Compare)
			fmt.Fprintf(&s, "  -compare-bin server     %7.1f MiB/s (best %.1f); server CPU %s, %d reads, %d writes; ratio %.3f\n",
				b.throughput(b.Compare), mibps(b.Size, bestRun(b.Compare).Took), fmtSec(c.Server), sc.Reads, sc.Writes, b.throughput(b.Compare)/b.throughput(b.Direct))
		}
		fmt.Fprintf(&s, "  ratio Slipway / direct  %.3f (median), %.3f (best runs), %.3f (CPU cost)\n", b.ratio(), b.bestRatio(), b.cpuRatio())
		sc := medianSyscalls(b.Slipway)
		fmt.Fprintf(&s, "  server CPU per upload   %s; %d read and %d write syscalls; after the last byte (all / storage / parse+DB) %s\n", fmtSec(medianCPU(b.Slipway).Server), sc.Reads, sc.Writes, afterBody(b.Slipway))
		fmt.Fprintf(&s, "  peak RSS: 1 upload %s (at rest %s), %d concurrent %s (at rest %s)\n",
			fmtMiB(float64(b.Peak1.HWM)), fmtMiB(float64(b.Baseline1.RSS)), b.Concurrency, fmtMiB(float64(b.Peak4.HWM)), fmtMiB(float64(b.Baseline4.RSS)))
		fmt.Fprintf(&s, "  %d concurrent: Slipway %.1f MiB/s aggregate, direct %.1f MiB/s\n", b.Concurrency,
			mibps(int64(b.Concurrency)*b.Size, b.Concurrent), mibps(int64(b.Concurrency)*b.Size, b.ConcurrentDirect))
		fmt.Fprintf(&s, "  parse: %s GETs, %s (%.3f%% of the package)\n", fmtNum(b.ParseGETs), fmtKiB(b.ParseBytes), b.parseShare()*100)
		for _, l := range b.Load {
			fmt.Fprintf(&s, "  %-24s %8.0f req/s  p50 %-9s p99 %s\n", l.Name, l.RPS, fmtLat(l.P50), fmtLat(l.P99))
		}
	}
	if rows := rep.targets(); len(rows) > 0 {
		fmt.Fprintf(&s, "\ntargets (S3):\n")
		for _, r := range rows {
			fmt.Fprintf(&s, "  %-48s %-22s %s\n", r.name, r.measured, strings.ReplaceAll(r.verdict, "**", ""))
		}
	}
	return s.String()
}

func short(s string) string {
	if i := strings.Index(s, " ("); i >= 0 {
		return s[:i]
	}
	return s
}

// writeMarkdown writes the report to path, keeping the notes section of the file it replaces.
func (rep *report) writeMarkdown(path string) error {
	notes := defaultNotes
	attackSection := keptAttackSection(path)
	if rep.Attack != nil {
		attackSection = rep.Attack.section()
	}
	if old, err := os.ReadFile(path); err == nil {
		if i := strings.Index(string(old), notesBegin); i >= 0 {
			if j := strings.Index(string(old[i:]), notesEnd); j >= 0 {
				notes = string(old[i+len(notesBegin) : i+j])
			}
		}
	}
	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	m := rep.Machine
	p("# Benchmarks\n\n")
	p("Generated by `%s` (the tool is `test/bench`) on %s UTC; it took %s. Every figure below comes from that run but those of \"Latency under attack\", which say when they were measured (`-scenarios attack` refreshes that section alone). Re-running `make bench` rewrites this file and keeps only the notes section at the end, which is written by hand.\n\n",
		rep.Command, rep.Started.Format("2006-01-02 15:04"), rep.Took.Round(time.Second))

	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s, %d cores (shared, noisy: other jobs run on it) |\n", m.CPU, m.Cores)
	p("| RAM | %.0f GiB |\n", float64(m.RAM)/(1<<30))
	p("| OS | %s |\n", m.Kernel)
	p("| Go | %s |\n", m.Go)
	p("| Slipway | commit %s, built with `go build -trimpath` (CGO off) |\n", m.Slipway)
	p("| Postgres | %s (local) |\n", m.Postgres)
	p("| MinIO | %s, single drive, loopback, started by `test/with-services.sh` |\n", m.MinIO)
	p("| Server GC settings | GOGC %s, GOMEMLIMIT %s |\n", m.GOGC, m.GOMEMLIMIT)
	p("| Load average (1/5/15 min) | %s before, %s after |\n\n", rep.LoadBefore, rep.LoadAfter)

	p("## Command\n\n```sh\nmake bench\n# = bash test/with-services.sh go run ./test/bench -out docs/benchmarks.md\n```\n\n")
	p("Options: %d MiB package, %d timed uploads per path (median reported), %d concurrent uploads, read API at %d connections for %s per endpoint after %d small releases.\n\n",
		rep.Options.sizeMiB, rep.Options.runs, rep.Options.concurrency, rep.Options.conns, rep.Options.duration, rep.Options.releases)

	if rows := rep.targets(); len(rows) > 0 {
		p("## Targets (issues 3, 11 and 12, S3 backend)\n\n| Target | Measured | Verdict |\n|---|---|---|\n")
		for _, r := range rows {
			p("| %s | %s | %s |\n", r.name, r.measured, r.verdict)
		}
		p("\n")
	}

	pk := rep.Package
	p("## The package\n\n")
	p("A synthetic .ipa of exactly %s (`appletest.WriteBenchIPA`) laid out like an exported app: `Info.plist` at offset %d and `embedded.mobileprovision` at %d (start of `Payload/Bench.app/`), then the executable and an `Assets.car` (incompressible, most of the bytes), the 4 app icons at %.1f–%.1f MiB (%.0f%% into the file), 6 frameworks and %d entries in all, mostly small deflated resources at the end; the central directory is %s. The upload keeps the stream's last 2 MiB to seed the parser's reader, so the directory costs no GET but `Info.plist`, the profile and the icons do. Generated in %s.\n\n",
		fmtMiB(float64(pk.Size)), pk.InfoPlistOffset, pk.ProfileOffset, float64(pk.FirstIconOffset)/(1<<20), float64(pk.LastIconEnd)/(1<<20),
		float64(pk.FirstIconOffset)/float64(max(pk.Size, 1))*100, pk.Entries, fmtKiB(float64(pk.CentralDirBytes)), pk.GenerateTook.Round(100*time.Millisecond))

	p("## Upload throughput\n\n")
	p("One %s upload at a time, median of %d; runs are interleaved (Slipway, direct, ...) so drift in the machine's load hits every path alike. CPU columns are the CPU time each process used during the upload (median), from /proc: they show where the 2 shared cores go.\n\n",
		fmtMiB(float64(pk.Size)), rep.Options.runs)
	p("| Backend | Path | Runs | Median | Best | MiB/s (median) | vs direct | CPU: slipway | CPU: MinIO | CPU: client |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, b := range rep.Backends {
		direct := b.throughput(b.Direct)
		row := func(name string, runs []timedRun, server bool) {
			var ts []string
			for _, r := range runs {
				ts = append(ts, fmt.Sprintf("%.2f", r.Took.Seconds()))
			}
			c := medianCPU(runs)
			srv, minio := "–", "–"
			if server {
				srv = fmtSec(c.Server)
			}
			if b.Kind == backendS3 {
				minio = fmtSec(c.MinIO)
			}
			p("| %s | %s | %s s | %s | %s | %.1f | %.3f | %s | %s | %s |\n", b.Name, name, strings.Join(ts, " / "), fmtSec(medianRun(runs).Took),
				fmtSec(bestRun(runs).Took), b.throughput(runs), b.throughput(runs)/direct, srv, minio, fmtSec(c.Client))
		}
		row("**Slipway** (POST /api/apps/upload, multipart, parse, DB)", b.Slipway, true)
		row(b.DirectName, b.Direct, false)
		if len(b.DirectStore) > 0 {
			row(b.DirectStoreName, b.DirectStore, false)
		}
		if len(b.Session) > 0 {
			row("**Upload session** (POST /api/uploads, 3 parts at a time straight to MinIO by presigned URL, complete: parse, DB)", b.Session, true)
			row("Upload session through `slipway upload` (adds the file's SHA-256, computed beside the sending)", b.SessionCLI, true)
		}
		if len(b.Compare) > 0 {
			row("Slipway built from `-compare-bin` (A/B, same rounds)", b.Compare, true)
		}
	}
	p("\n")
	p("The ratio three ways — of the medians (the target's figure), of the best runs (least disturbed by other jobs), and predicted from CPU cost (CPU time per upload of the direct path, client + MinIO, over that of the Slipway path, client + Slipway + MinIO: the throughput ratio when the shared cores are the bottleneck) — the time between the client's last byte and the response (the last part, completing the multipart upload, parsing and the database transaction), and the server's system calls per upload (/proc/<pid>/io):\n\n")
	p("| Backend | Ratio (medians) | Ratio (best runs) | Ratio (CPU cost) | Slipway CPU per GiB | After the last byte: in all / storage completes / parse, icon, DB | Server read syscalls | Bytes per read | Server write syscalls | Bytes per write |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, b := range rep.Backends {
		sc := medianSyscalls(b.Slipway)
		per := func(n int64) string {
			if n == 0 {
				return "–"
			}
			return fmt.Sprintf("%.1f KiB", float64(b.Size)/float64(n)/1024)
		}
		p("| %s | %.3f | %.3f | %.3f | %.2f s | %s | %d | %s | %d | %s |\n", b.Name, b.ratio(), b.bestRatio(), b.cpuRatio(),
			medianCPU(b.Slipway).Server.Seconds()/(float64(b.Size)/(1<<30)), afterBody(b.Slipway), sc.Reads, per(sc.Reads), sc.Writes, per(sc.Writes))
	}
	p("\n")
	p("- **Direct PUT baseline (S3):** one streamed `PutObject` of known length through aws-sdk-go-v2, signed with `UNSIGNED-PAYLOAD` and checksums only when required, exactly as Slipway signs its parts. It is the fastest way a client could put the same bytes into the same MinIO, so the ratio is Slipway's whole cost: receiving the multipart body, SHA-256, the tail, re-sending in 8 MiB parts (2 in flight), parsing and the database.\n")
	p("- **storage/s3 Put** is Slipway's own multipart code called in-process (no HTTP server, hash, parse or DB): the gap between it and the direct PUT is the part strategy, the gap between it and Slipway is the server.\n")
	p("- **Filesystem baseline:** `storage/fs` Put of the same file (256 KiB copy, fsync, rename, folder fsync) into a folder on the same disk, i.e. what writing the file yourself durably costs. No ratio target applies to it.\n")
	p("- Every client streams the file through a plain `io.Reader` (no sendfile), one request per upload; the Slipway client sends `multipart/form-data` with a Content-Length, fields first and the file last, as fastlane does.\n\n")

	p("## Server memory (peak RSS)\n\n")
	p("VmHWM of the `slipway serve` process from /proc/<pid>/status. Each scenario runs on a fresh process, since VmHWM is a lifetime peak; \"at rest\" is VmRSS a second after start. The single-upload peak is read right after the first upload of a fresh server, which is not counted in the throughput medians above (it took")
	for i, b := range rep.Backends {
		if i > 0 {
			p(";")
		}
		p(" %s with %s", fmtSec(b.First.Took), b.Name)
	}
	p(").\n\n")
	p("| Backend | At rest | Peak, 1 upload | At rest (fresh process) | Peak, %d concurrent | %d concurrent: Slipway aggregate | %d concurrent: direct aggregate |\n|---|---|---|---|---|---|---|\n",
		rep.Options.concurrency, rep.Options.concurrency, rep.Options.concurrency)
	for _, b := range rep.Backends {
		n := int64(b.Concurrency) * b.Size
		p("| %s | %s | %s | %s | %s | %.1f MiB/s (%s) | %.1f MiB/s (%s) |\n", b.Name, fmtMiB(float64(b.Baseline1.RSS)), fmtMiB(float64(b.Peak1.HWM)),
			fmtMiB(float64(b.Baseline4.RSS)), fmtMiB(float64(b.Peak4.HWM)), mibps(n, b.Concurrent), fmtSec(b.Concurrent), mibps(n, b.ConcurrentDirect), fmtSec(b.ConcurrentDirect))
	}
	p("\n")
	for _, b := range rep.Backends {
		rt := b.Runtime1
		if rt == nil {
			continue
		}
		p("- %s, Go runtime after the first upload (from /metrics): heap in use %s, heap obtained from the OS %s, total from the OS %s, %s GC cycles.\n",
			b.Name, fmtMiB(rt["go_memstats_heap_inuse_bytes"]), fmtMiB(rt["go_memstats_heap_sys_bytes"]), fmtMiB(rt["go_memstats_sys_bytes"]), fmtNum(rt["go_gc_duration_seconds_count"]))
	}
	p("\n")

	p("## Parsing: storage reads\n\n")
	p("Deltas of the server's `slipway_parse_storage_gets` and `slipway_parse_storage_bytes` histograms (`_sum`, `_count`) around the first upload on a fresh server.\n\n")
	p("| Backend | Parses | GETs | Bytes read | Share of the package | Parse time |\n|---|---|---|---|---|---|\n")
	for _, b := range rep.Backends {
		p("| %s | %s | %s | %s | %.3f%% | %.1f ms |\n", b.Name, fmtNum(b.ParseCount), fmtNum(b.ParseGETs), fmtKiB(b.ParseBytes), b.parseShare()*100, b.ParseSeconds*1000)
	}
	p("\n")

	p("## Read API\n\n")
	p("%d keep-alive connections, each sending one request at a time for %s after a 1 s warm-up, against the server that took the concurrent uploads, on a channel holding %d releases. The load generator runs on the same 2 cores as the server and Postgres, so these are lower bounds.\n\n",
		rep.Options.conns, rep.Options.duration, rep.Options.releases)
	p("| Backend | Endpoint | Requests | Req/s | of `/healthz` | p50 | p99 | Max |\n|---|---|---|---|---|---|---|---|\n")
	for _, b := range rep.Backends {
		var healthz float64
		for _, l := range b.Load {
			if l.Name == loadHealthz {
				healthz = l.RPS
			}
		}
		for _, l := range b.Load {
			p("| %s | `%s` | %d | %.0f | %.2f | %s | %s | %s |\n", b.Name, l.Name, l.Requests, l.RPS, l.RPS/max(healthz, 1), fmtLat(l.P50), fmtLat(l.P99), fmtLat(l.Max))
		}
	}
	p("\n")

	for _, b := range rep.Backends {
		for _, pr := range []struct {
			title string
			p     *profileResult
		}{{"", b.Profile}, {", `-compare-bin` server", b.CompareProfile}} {
			if pr.p != nil {
				rep.writeProfile(p, b.Name+pr.title, pr.p)
			}
		}
	}

	if attackSection != "" {
		p("%s\n", attackSection)
	}
	if old, err := os.ReadFile(path); err == nil {
		if kept := keptFloorSection(string(old)); kept != "" {
			p("%s\n", kept)
		}
	}
	p("## How to read this\n\n")
	p("- The machine is a shared 2-core VM: MinIO, Postgres, the Slipway server and the benchmark's own clients all run on the same two cores, and other jobs may run beside them (see the load average above). Throughput here is bounded by CPU, not by the network (loopback) or the disk: compare the CPU columns, not just the seconds.\n")
	p("- The ratio compares medians measured minutes apart on a noisy machine; a few percent either way is noise. Re-run before concluding that a change moved it.\n")
	p("- CPU columns are the sum of the scheduler's run time over each process's threads (/proc/<pid>/task/*/schedstat), so they do not depend on how busy the machine was; the benchmark client's is its own getrusage. They are the steadiest figures here.\n")
	p("- Peak RSS is VmHWM, which counts every page the process ever touched, including the Go runtime's heap growth before the GC returns memory; it is an upper bound of what a container limit must allow.\n")
	p("- Read-API figures are for this machine with the load generator competing for the same cores; on a real deployment the client is elsewhere.\n\n")

	p("## Notes\n\n%s%s%s\n", notesBegin, notes, notesEnd)
	return os.WriteFile(path, []byte(w.String()), 0o644)
}

// writeProfile writes one perf profile section.
func (rep *report) writeProfile(p func(string, ...any), name string, pr *profileResult) {
	p("## Profile of one upload (%s)\n\n", name)
	if pr.Err != "" {
		p("No profile: %s.\n\n", pr.Err)
		return
	}
	p("`perf record -F 999 -g -p <slipway pid>` during one more upload (%s; CPU: slipway %s, MinIO %s, client %s). Where the server's CPU goes, cumulative (a function and everything it calls; rows overlap):\n\n",
		fmtSec(pr.Took), fmtSec(pr.CPU.Server), fmtSec(pr.CPU.MinIO), fmtSec(pr.CPU.Client))
	p("| Cost centre | Function | Share of server CPU |\n|---|---|---|\n")
	for _, c := range pr.Centres {
		p("| %s | `%s` | %.1f%% |\n", c.What, c.Symbol, c.Percent)
	}
	p("\nFlat profile (self time, symbols ≥ 0.7%%; `[k]` is the kernel):\n\n```\n%s\n```\n\n", pr.Self)
}

const defaultNotes = "\n_Analysis of the figures above (kept across runs)._\n"

// markedSection is the part of the report s from the begin marker to the end marker, the
// newline after it included, or "" when s has none.
func markedSection(s, begin, end string) string {
	i := strings.Index(s, begin)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return ""
	}
	stop := i + j + len(end)
	if stop < len(s) && s[stop] == '\n' {
		stop++
	}
	return s[i:stop]
}

// writeMarkedSection puts a generated section (between its begin and end markers) into the
// report at path: in place of the one there, or before "## How to read this" (or the notes) when
// it has none, leaving the rest as it is.
func writeMarkedSection(path, section, begin, end string) error {
	old, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return os.WriteFile(path, []byte("# Benchmarks\n\n"+section), 0o644)
	}
	if err != nil {
		return err
	}
	s := string(old)
	if kept := markedSection(s, begin, end); kept != "" {
		s = strings.Replace(s, kept, section, 1)
	} else {
		at := len(s)
		for _, h := range []string{"## How to read this", "## Notes"} {
			if i := strings.Index(s, "\n"+h); i >= 0 {
				at = i + 1
				break
			}
		}
		s = s[:at] + section + "\n" + s[at:]
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
