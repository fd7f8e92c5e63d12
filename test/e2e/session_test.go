package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/uploader"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestCLIUploadSessionResume is a 1 GiB build on a link that breaks: `slipway upload` sends it
// through an upload session, parts straight to MinIO, and is killed halfway; run again, it asks
// the server which parts are done, sends the rest, and gets the release. The bytes downloaded back
// are the file's, the replica's memory stays within its budget, and the replica never reads the
// file but for the ranged reads that parse it.
func TestCLIUploadSessionResume(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 1 GiB")
	}
	t.Parallel()
	h := e2e.New(t, e2e.Options{Storage: e2e.S3, NoRace: true})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")

	path := filepath.Join(t.TempDir(), "Big.ipa")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.New()
	if _, err := appletest.WriteBenchIPA(io.MultiWriter(f, hash), appletest.BenchIPAOptions{Size: 1 << 30,
		App: appletest.IPAOptions{AppName: "Big", BundleID: "com.example.big", Version: "9.0", Build: "900"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(hash.Sum(nil))
	ioBefore := testkit.ProcIO(t, s.PID).RChar

	// First run: killed once half the parts are in the bucket.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2e.Binary(t), "upload", path, "--url", s.URL, "--progress", "none")
	cmd.Env = append(h.Environ(), "SLIPWAY_TOKEN="+token)
	if err := e2e.StartProcess(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var sessionID string
	for {
		select {
		case err := <-exited:
			t.Fatalf("the first run ended before it was killed (%v): the test needs a slower upload", err)
		case <-time.After(100 * time.Millisecond):
		}
		if b, err := os.ReadFile(uploader.StatePath(path)); err == nil {
			var st struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal(b, &st) == nil {
				sessionID = st.SessionID
			}
		}
		if sessionID == "" {
			continue
		}
		done, total := sessionProgress(t, s, token, sessionID)
		if done*2 >= total {
			break
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	done, total := sessionProgress(t, s, token, sessionID)
	if done == total {
		t.Fatalf("all %d parts were in before the kill: nothing left to resume", total)
	}
	t.Logf("killed with %d of %d parts done", done, total)

	// Second run: resumes the same session and completes it.
	res := h.RunEnv(t, []string{"SLIPWAY_TOKEN=" + token}, "upload", path, "--url", s.URL, "--progress", "lines")
	if res.ExitCode != 0 {
		t.Fatalf("resumed upload failed:\n%s", res)
	}
	assertNoSecret(t, res, token)
	_, id := releaseURLParts(t, s, res.LastLine())
	if _, err := os.Stat(uploader.StatePath(path)); !os.IsNotExist(err) {
		t.Errorf("the state file is still there after success: %v", err)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM upload_sessions`); n != 1 {
		t.Errorf("%d sessions: the second run did not resume the first's", n)
	}
	if sum := h.QueryInt(t, `SELECT count(*) FROM releases WHERE id = $1 AND sha256 = $2 AND size = $3`, id, want, int64(1<<30)); sum != 1 {
		t.Errorf("the release's checksum or size is not the file's")
	}

	// The bytes downloaded back are the file's.
	r := s.Get(t, fmt.Sprintf("/download/releases/%d", id))
	if r.Status != http.StatusFound {
		t.Fatalf("download: %d", r.Status)
	}
	resp, err := http.Get(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	dl := sha256.New()
	n, err := io.Copy(dl, resp.Body)
	resp.Body.Close()
	if err != nil || n != 1<<30 || hex.EncodeToString(dl.Sum(nil)) != want {
		t.Fatalf("downloaded %d bytes (%v), sha256 %x, want %s", n, err, dl.Sum(nil), want)
	}

	// The upload itself read none of the file but the parse's ranges; the checksum verifier then
	// reads the stored object once (issue 23: a session's declared SHA-256 is checked against the
	// stored bytes before feeds may offer it), streaming, so memory stays within bounds.
	testkit.Eventually(t, 3*time.Minute, "the session's checksum to be verified", func() bool {
		return h.QueryInt(t, `SELECT count(*) FROM releases WHERE id = $1 AND checksum_state = 'verified'`, id) == 1
	})
	ioAfter := testkit.ProcIO(t, s.PID).RChar
	if read := ioAfter - ioBefore; read > 1<<30+64<<20 {
		t.Errorf("the replica read %d MiB during a 1 GiB session upload: more than the verifier's one read and the parse's ranges", read>>20)
	}
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if peak, bound := testkit.PeakRSS(t, s.PID), cfg.MemorySoftLimit()+32<<20; peak > bound {
		t.Errorf("peak RSS %d MiB over %d MiB", peak>>20, bound>>20)
	} else {
		t.Logf("replica: read %d KiB, peak RSS %d MiB", (ioAfter-ioBefore)>>10, peak>>20)
	}
}

// sessionProgress counts the done parts of a session.
func sessionProgress(t *testing.T, s *e2e.Server, token, id string) (done, total int) {
	t.Helper()
	r := s.Do(t, http.MethodGet, "/api/uploads/"+id, nil, "Authorization", "Token "+token)
	var sess struct {
		Parts []struct{ Done bool }
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &sess) != nil {
		t.Fatalf("session: %d %s", r.Status, r.Body)
	}
	for _, p := range sess.Parts {
		if p.Done {
			done++
		}
	}
	return done, len(sess.Parts)
}
