// Command bench measures Slipway end to end on one machine and writes docs/benchmarks.md
// (`make bench`, which runs it under test/with-services.sh for MinIO and Postgres):
//
//   - upload throughput of a 256 MiB .ipa through Slipway into MinIO (and into the filesystem
//     backend), against putting the same file straight into the same store;
//   - the server's peak RSS (VmHWM) for one upload and for 4 concurrent uploads, each measured on a
//     fresh server process;
//   - the storage GETs and bytes the server read to parse the package (its Prometheus histograms);
//   - requests per second and p50/p99 latency of the read API (latest, versions) next to /healthz,
//     at 32 connections;
//   - the latency of `latest` under attack: test/hostile's suite run a few times, its attacked
//     replica's p50/p99 beside those of a control replica nobody attacks (attack.go).
//
// -scenarios picks them: "upload" is everything above but the attack (one fresh server per
// backend and measurement), "attack" the last. `-scenarios attack -out docs/benchmarks.md`
// rewrites only the report's "Latency under attack" section:
//
//	bash test/with-services.sh go run ./test/bench -scenarios attack -out docs/benchmarks.md
//
// Everything runs on loopback and is bounded in time and size; the database, bucket, folders and
// processes it creates are removed at the end. `go test ./...` runs only this package's check of
// the report writer; its one benchmark (BenchmarkIngest, an in-process model of the upload read
// path) runs only with -bench.
//
// To weigh a change to the upload path on a noisy machine, build the server before and after it
// and run both in the same rounds:
//
//	bash test/with-services.sh go run ./test/bench -slipway-bin /tmp/before/slipway \
//	    -compare-bin /tmp/after/slipway -runs 5 -profile on -out /tmp/ab.md
//
// CPU time (from /proc, per process) and system calls are far steadier than wall time there.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// options are the command-line flags.
type options struct {
	out         string
	sizeMiB     int64
	runs        int
	concurrency int
	conns       int
	duration    time.Duration
	releases    int
	backends    string
	profile     string
	workDir     string
	slipwayBin  string
	compareBin  string
	scenarios   string
	attackRuns  int
	attackRace  bool
}

func main() {
	if target := os.Getenv(floorProxyEnv); target != "" {
		if err := serveFloorProxy(target); err != nil {
			log.Fatal(err)
		}
		return
	}
	var o options
	flag.StringVar(&o.out, "out", "", "write the Markdown report to this file (e.g. docs/benchmarks.md)")
	flag.Int64Var(&o.sizeMiB, "size-mib", 256, "size of the benchmark .ipa in MiB")
	flag.IntVar(&o.runs, "runs", 3, "timed uploads per path (the median is reported)")
	flag.IntVar(&o.concurrency, "concurrency", 4, "concurrent uploads for the second peak-RSS figure")
	flag.IntVar(&o.conns, "conns", 32, "connections of the read-API load test")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of each read-API load test")
	flag.IntVar(&o.releases, "releases", 50, "small releases uploaded to one channel before the read-API load test")
	flag.StringVar(&o.backends, "backends", "s3,fs", "storage backends to measure: s3 (MinIO), fs, or both")
	flag.StringVar(&o.profile, "profile", "auto", "record the server with perf during one extra upload: auto (when the S3 throughput ratio misses its target), on, off")
	flag.StringVar(&o.workDir, "workdir", "", "folder for the temporary files (default: the system temp folder)")
	flag.StringVar(&o.slipwayBin, "slipway-bin", "", "use this slipway binary instead of building ./cmd/slipway")
	flag.StringVar(&o.compareBin, "compare-bin", "", "A/B: also time uploads through a server running this binary, interleaved with the others")
	flag.StringVar(&o.scenarios, "scenarios", "upload,attack", "what to measure: upload (throughput, memory, parse reads, read API), attack (latency of latest under test/hostile's attacks), floor (the proxied upload against SHA-256 and a direct PUT, both client kinds, memory at rest)")
	flag.IntVar(&o.attackRuns, "attack-runs", 3, "runs of the hostile-client suite for the attack scenario (the median is reported)")
	flag.BoolVar(&o.attackRace, "attack-race", false, "run the hostile-client suite with -race, as make test does")
	flag.Parse()
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		log.Printf("FAILED: %v", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.runs < 1 || o.concurrency < 1 || o.conns < 1 || o.sizeMiB < 64 || o.attackRuns < 1 {
		return fmt.Errorf("-runs, -concurrency, -conns and -attack-runs must be positive and -size-mib at least 64")
	}
	var upload, attack, floor bool
	for _, sc := range strings.Split(o.scenarios, ",") {
		switch strings.TrimSpace(sc) {
		case "upload":
			upload = true
		case "attack":
			attack = true
		case "floor":
			floor = true
		case "":
		default:
			return fmt.Errorf("-scenarios: unknown scenario %q (want upload, attack or floor)", sc)
		}
	}
	if !upload && !attack && !floor {
		return fmt.Errorf("-scenarios names nothing to measure")
	}
	if floor {
		if upload {
			return fmt.Errorf("-scenarios: run floor on its own (it starts servers of its own)")
		}
		res, err := runFloor(ctx, o, commandLine())
		if err != nil {
			return err
		}
		fmt.Print(res.summary())
		if o.out != "" {
			if err := writeFloorSection(o.out, res.section()); err != nil {
				return err
			}
			log.Printf("wrote the floor section of %s", o.out)
		}
		if !attack {
			return nil
		}
	}
	if !upload {
		res, err := runAttack(ctx, o, commandLine())
		if err != nil {
			return err
		}
		fmt.Print(res.summary())
		if o.out != "" {
			if err := writeAttackSection(o.out, res.section()); err != nil {
				return err
			}
			log.Printf("wrote the latency-under-attack section of %s", o.out)
		}
		return nil
	}
	started := time.Now()
	rep := &report{Command: commandLine(), Options: o, Started: started.UTC(), Machine: describeMachine(), LoadBefore: loadAvg()}

	env, err := newEnv(ctx, o)
	if err != nil {
		return err
	}
	defer env.close()
	rep.Machine.Postgres, rep.Machine.MinIO = env.pgVersion, env.minioVersion
	rep.Package = env.pkg

	for _, b := range strings.Split(o.backends, ",") {
		var br *backendResult
		switch strings.TrimSpace(b) {
		case "s3":
			br, err = env.benchBackend(ctx, backendS3)
		case "fs":
			br, err = env.benchBackend(ctx, backendFS)
		case "":
			continue
		default:
			return fmt.Errorf("-backends: unknown backend %q (want s3 or fs)", b)
		}
		if err != nil {
			return err
		}
		rep.Backends = append(rep.Backends, br)
	}
	env.close()
	if attack {
		if rep.Attack, err = runAttack(ctx, o, rep.Command); err != nil {
			return err
		}
	}
	rep.LoadAfter = loadAvg()
	rep.Took = time.Since(started)

	summary := rep.summary()
	if rep.Attack != nil {
		summary += rep.Attack.summary()
	}
	fmt.Print(summary)
	if o.out != "" {
		if err := rep.writeMarkdown(o.out); err != nil {
			return err
		}
		log.Printf("wrote %s", o.out)
	}
	return nil
}

// commandLine is how the report says it was produced: `make bench` when run through the Makefile.
func commandLine() string {
	if os.Getenv("MAKELEVEL") != "" {
		return "make bench"
	}
	return "bash test/with-services.sh go run ./test/bench " + strings.Join(os.Args[1:], " ")
}
