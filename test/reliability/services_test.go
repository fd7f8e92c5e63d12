package reliability

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// serviceTimeout bounds the start and stop of a private MinIO or Postgres: generous, because the
// machine may be busy with other packages' tests.
const serviceTimeout = 2 * time.Minute

// missing skips the test, or fails it when the services are required (make test).
func missing(t testing.TB, what string) {
	t.Helper()
	msg := what + ": run the tests with test/with-services.sh (make test), which provides it"
	if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// process is a child process with its output kept for failure reports.
type process struct {
	cmd  *exec.Cmd
	out  *testkit.LockedBuffer
	done chan struct{}
}

func startProcess(t testing.TB, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, out: &testkit.LockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := e2e.StartProcess(cmd); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits (bounded) for the process to end.
func (p *process) stop(t testing.TB, sig os.Signal) {
	t.Helper()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(serviceTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s ignored %v for %s; killed it", p.cmd.Path, sig, serviceTimeout)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// minioServer is a MinIO of the test's own, which the test may kill and restart.
type minioServer struct {
	bin, dir          string
	addr, consoleAddr string
	accessKey, secret string
	proc              *process
	previousOutputs   []string
}

// startMinIO starts a private MinIO on a free loopback port with a temporary data folder. It is
// killed when the test ends.
func startMinIO(t *testing.T) *minioServer {
	t.Helper()
	bin := os.Getenv("SLIPWAY_TEST_MINIO_BIN")
	if bin == "" {
		missing(t, "SLIPWAY_TEST_MINIO_BIN (the MinIO binary) is not set")
	}
	if _, err := os.Stat(bin); err != nil {
		missing(t, fmt.Sprintf("the MinIO binary %s: %v", bin, err))
	}
	m := &minioServer{
		bin: bin, dir: t.TempDir(), accessKey: "reliability", secret: "reliability-minio-secret-" + testkit.RandomHex(8),
	}
	// A free port is free when freeAddr closes it, not when MinIO binds it: a parallel test may
	// take it meanwhile (a CI run saw "Specified port is already in use"). Only that refusal
	// chooses new ports; any other failure fails the test.
	for attempt := 1; ; attempt++ {
		m.addr, m.consoleAddr = freeAddr(t), freeAddr(t)
		if m.launch(t) || attempt == 5 {
			break
		}
		m.previousOutputs = append(m.previousOutputs, m.proc.out.String())
		m.proc = nil
	}
	m.wait(t)
	t.Cleanup(func() {
		if m.proc != nil {
			m.proc.stop(t, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("private MinIO output:\n%s", m.output())
		}
	})
	return m
}

// endpoint is the MinIO's URL.
func (m *minioServer) endpoint() string { return "http://" + m.addr }

// start runs the server (again, on the same port and data folder) and waits until it is ready.
func (m *minioServer) start(t *testing.T) {
	t.Helper()
	if m.proc != nil {
		m.previousOutputs = append(m.previousOutputs, m.proc.out.String())
	}
	m.launch(t)
	m.wait(t)
}

// launch starts the process and reports false only when it exited at once because its port was
// taken (startMinIO then chooses others).
func (m *minioServer) launch(t *testing.T) bool {
	t.Helper()
	cmd := exec.Command(m.bin, "server", "--quiet", "--address", m.addr, "--console-address", m.consoleAddr, m.dir)
	cmd.Env = append(cleanEnviron(),
		"MINIO_ROOT_USER="+m.accessKey, "MINIO_ROOT_PASSWORD="+m.secret, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	m.proc = startProcess(t, cmd)
	deadline := time.Now().Add(serviceTimeout)
	c := &http.Client{Timeout: 2 * time.Second}
	for !m.proc.exited() && time.Now().Before(deadline) {
		resp, err := c.Get(m.endpoint() + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !(m.proc.exited() && strings.Contains(m.proc.out.String(), "already in use"))
}

// wait waits until the started server is ready, failing the test if it exits or never is.
func (m *minioServer) wait(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(serviceTimeout)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := c.Get(m.endpoint() + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if m.proc.exited() {
			t.Fatalf("private MinIO exited while starting:\n%s", m.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("private MinIO not ready within %s:\n%s", serviceTimeout, m.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the server abruptly (SIGKILL), as a crash or a lost node would.
func (m *minioServer) kill(t *testing.T) { m.proc.stop(t, syscall.SIGKILL) }

func (m *minioServer) output() string {
	out := strings.Join(m.previousOutputs, "\n--- restarted ---\n")
	if m.proc != nil {
		out += m.proc.out.String()
	}
	return out
}

// bucket creates a bucket and returns it as a test S3 environment for e2e.Options.S3.
func (m *minioServer) bucket(t *testing.T) *testenv.S3Env {
	t.Helper()
	e := testenv.S3Env{Endpoint: m.endpoint(), Region: "us-east-1", AccessKey: m.accessKey, SecretKey: m.secret,
		Bucket: "reliability-" + testkit.RandomHex(6)}
	q := url.Values{"region": {e.Region}, "endpoint": {e.Endpoint}, "path_style": {"true"}}
	e.URL = "s3://" + e.Bucket + "?" + q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Client().CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &e.Bucket}); err != nil {
		t.Fatalf("creating a bucket on the private MinIO: %v", err)
	}
	return &e
}

// pgCluster is a Postgres cluster of the test's own, which the test may stop and start.
type pgCluster struct {
	bindir, dir string
	port        int
	cred        *syscall.Credential
	proc        *process
	outputs     []string
}

// pgBinDir finds initdb and postgres: SLIPWAY_TEST_PG_BINDIR, else the newest
// /usr/lib/postgresql/*/bin (Debian's layout), else the folder of initdb on PATH.
func pgBinDir() string {
	if d := os.Getenv("SLIPWAY_TEST_PG_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// startCluster creates a cluster (initdb, trust authentication) in a temporary folder and starts
// it on a free loopback port. Postgres refuses to run as root, so under root it runs as the
// postgres user. It is stopped and removed when the test ends.
func startCluster(t *testing.T) *pgCluster {
	t.Helper()
	bindir := pgBinDir()
	if bindir == "" {
		missing(t, "the Postgres server binaries (initdb, postgres) are not installed")
	}
	dir, err := os.MkdirTemp("", "slipway-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &pgCluster{bindir: bindir, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			missing(t, "running as root, Postgres needs a postgres user to run as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	initdb := c.command(filepath.Join(bindir, "initdb"), "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8",
		"--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	c.port, _ = strconv.Atoi(port)
	c.start(t)
	t.Cleanup(func() {
		if c.proc != nil {
			c.proc.stop(t, syscall.SIGINT)
		}
		if t.Failed() {
			t.Logf("private Postgres output:\n%s", c.output())
		}
	})
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

func (c *pgCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C"}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// URL is the connection URL of database db on the cluster.
func (c *pgCluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// start runs the postmaster (again, on the same port and data folder) and waits until it accepts
// connections. It runs `postgres` itself rather than through pg_ctl, so that it is the test's
// child: e2e.StartProcess then kills it if the test process dies.
func (c *pgCluster) start(t *testing.T) {
	t.Helper()
	if c.proc != nil {
		c.outputs = append(c.outputs, c.proc.out.String())
	}
	cmd := c.command(filepath.Join(c.bindir, "postgres"), "-D", c.data(), "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	c.proc = startProcess(t, cmd)
	deadline := time.Now().Add(serviceTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if c.proc.exited() {
			t.Fatalf("private Postgres exited while starting:\n%s", c.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("private Postgres not accepting connections within %s: %v\n%s", serviceTimeout, err, c.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the cluster down the way `pg_ctl stop -m fast` does (SIGINT: sessions are
// terminated, then a clean shutdown) and waits until the postmaster has exited.
func (c *pgCluster) stop(t *testing.T) { c.proc.stop(t, syscall.SIGINT) }

func (c *pgCluster) output() string {
	out := strings.Join(c.outputs, "\n--- restarted ---\n")
	if c.proc != nil {
		out += c.proc.out.String()
	}
	return out
}

// cleanEnviron is this process's environment without SLIPWAY_*, AWS_* and MINIO_* variables.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLIPWAY_") || strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "MINIO_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
