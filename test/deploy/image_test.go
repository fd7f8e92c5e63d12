package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// imagePlatforms are the platforms `make image` builds, with the ELF machine each binary must have.
var imagePlatforms = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// buildStage returns the Dockerfile's instructions from the FROM that runs go build up to the next
// FROM, FROM itself first.
func buildStage(t *testing.T) []instruction {
	t.Helper()
	var stage []instruction
	found := false
	for _, in := range dockerfileInstructions(t) {
		if in.cmd == "FROM" {
			if found {
				break
			}
			stage = nil
		}
		stage = append(stage, in)
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			found = true
		}
	}
	if !found {
		t.Fatal("Dockerfile: no stage runs go build")
	}
	return stage
}

// The build stage takes its target platform from BuildKit: it runs on $BUILDPLATFORM, declares
// TARGETOS and TARGETARCH without defaults (a default given in the stage replaces BuildKit's
// value: issue 26, point 10), and hands them to go build as GOOS and GOARCH.
func TestDockerfilePlatformArgs(t *testing.T) {
	stage := buildStage(t)
	if from := stage[0].args; !strings.HasPrefix(from, "--platform=$BUILDPLATFORM ") && !strings.HasPrefix(from, "--platform=${BUILDPLATFORM} ") {
		t.Errorf("build stage FROM %q: want --platform=$BUILDPLATFORM (compile natively, cross-compile for the target)", from)
	}
	declared := map[string]bool{}
	for _, in := range stage {
		if in.cmd != "ARG" {
			continue
		}
		name, def, hasDefault := strings.Cut(in.args, "=")
		if name == "TARGETOS" || name == "TARGETARCH" || name == "TARGETPLATFORM" || name == "TARGETVARIANT" {
			if hasDefault {
				t.Errorf("ARG %s=%s in the build stage overrides BuildKit's value: an arm64 image would get a %s binary", name, def, def)
			}
			declared[name] = true
		}
	}
	for _, name := range []string{"TARGETOS", "TARGETARCH"} {
		if !declared[name] {
			t.Errorf("ARG %s is not declared in the build stage: BuildKit's value would not reach go build", name)
		}
	}
	// Outside the build stage, a global ARG with a default would be just as wrong.
	for _, in := range dockerfileInstructions(t) {
		if in.cmd == "ARG" && (strings.HasPrefix(in.args, "TARGETOS=") || strings.HasPrefix(in.args, "TARGETARCH=")) {
			t.Errorf("ARG %s: BuildKit's platform arguments must not get a default", in.args)
		}
	}
	run := dockerfileGoBuild(t, map[string]string{"TARGETOS": "linux", "TARGETARCH": "arm64"})
	if run.env["GOOS"] != "linux" || run.env["GOARCH"] != "arm64" {
		t.Errorf("go build runs with GOOS=%q GOARCH=%q for TARGETOS=linux TARGETARCH=arm64", run.env["GOOS"], run.env["GOARCH"])
	}
}

// goCommand is the Dockerfile's go build with its variables set: the environment words before
// `go`, and go's arguments.
type goCommand struct {
	env  map[string]string
	args []string
}

// dockerfileGoBuild expands the Dockerfile's go build RUN line as the shell in the build stage
// would, with vars for the build arguments (VERSION and COMMIT get test values).
func dockerfileGoBuild(t *testing.T, vars map[string]string) goCommand {
	t.Helper()
	var line string
	for _, in := range buildStage(t) {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			line = in.args
		}
	}
	words := strings.Fields(line)
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		words = words[1:] // RUN's own options (--mount=...)
	}
	values := map[string]string{"VERSION": "deploy-test", "COMMIT": "0000000"}
	for k, v := range vars {
		values[k] = v
	}
	expanded := os.Expand(strings.Join(words, " "), func(name string) string {
		v, ok := values[name]
		if !ok {
			t.Errorf("the go build line uses $%s, which the test does not know", name)
		}
		return v
	})
	all, err := shellWords(expanded)
	if err != nil {
		t.Fatal(err)
	}
	c := goCommand{env: map[string]string{}}
	i := 0
	for ; i < len(all) && envWord.MatchString(all[i]); i++ {
		k, v, _ := strings.Cut(all[i], "=")
		c.env[k] = v
	}
	if i >= len(all) || all[i] != "go" {
		t.Fatalf("the RUN line %q does not run go", expanded)
	}
	c.args = all[i+1:]
	return c
}

// The Dockerfile's own go build line, run for linux/arm64 as BuildKit would run it for that
// platform (TARGETOS=linux TARGETARCH=arm64), makes a static arm64 ELF binary. This checks the
// platform logic without a container engine.
func TestDockerfileCrossCompilesArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the whole binary; skipped with -short")
	}
	c := dockerfileGoBuild(t, map[string]string{"TARGETOS": "linux", "TARGETARCH": "arm64"})
	out := filepath.Join(t.TempDir(), "slipway")
	args := append([]string(nil), c.args...)
	replaced := false
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-o" {
			args[i+1] = out
			replaced = true
		}
	}
	if !replaced {
		t.Fatalf("go build %q has no -o", args)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = os.Environ()
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v go %s: %v\n%s", c.env, strings.Join(args, " "), err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkELF(t, "linux/arm64 (cross-compiled)", f, elf.EM_AARCH64)
}

// checkELF checks that r is a static 64-bit Linux ELF executable for machine.
func checkELF(t *testing.T, what string, r io.ReaderAt, machine elf.Machine) {
	t.Helper()
	ef, err := elf.NewFile(r)
	if err != nil {
		t.Fatalf("%s: not an ELF file: %v", what, err)
	}
	defer ef.Close()
	if ef.Machine != machine || ef.Class != elf.ELFCLASS64 || ef.Type != elf.ET_EXEC {
		t.Errorf("%s: ELF machine %v, class %v, type %v; want %v, ELFCLASS64, ET_EXEC", what, ef.Machine, ef.Class, ef.Type, machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: dynamically linked (PT_INTERP): distroless/static has no libc", what)
		}
	}
	t.Logf("%s: %v %v", what, ef.Machine, ef.Class)
}

// buildxReady reports whether docker buildx has a running builder, and why not.
func buildxReady() (bool, string) {
	if _, err := exec.LookPath("docker"); err != nil {
		return false, "no docker CLI in PATH"
	}
	if out, err := exec.Command("docker", "buildx", "version").CombinedOutput(); err != nil {
		return false, "docker buildx is not available: " + firstLine(string(out))
	}
	if out, err := exec.Command("docker", "buildx", "inspect", "--bootstrap").CombinedOutput(); err != nil {
		return false, "no buildx builder is running: " + firstLine(string(out))
	}
	return true, ""
}

// `make image` builds linux/amd64 and linux/arm64; each platform's image holds a binary for that
// platform. Where no buildx builder exists the target must fail with a message saying so, and the
// build is skipped with the reason.
func TestImageMultiArch(t *testing.T) {
	root := repoRoot(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	ok, why := buildxReady()
	if !ok {
		cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_OCI="+filepath.Join(t.TempDir(), "image.tar"))
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("make image succeeded although %s:\n%s", why, out)
		}
		if !strings.Contains(string(out), "make image: ") {
			t.Errorf("make image failed without its own message:\n%s", out)
		}
		t.Skipf("no image build here (%s); make image refuses with: %s", why, firstLine(string(out)))
	}
	if testing.Short() {
		t.Skip("builds the image for two platforms; skipped with -short")
	}
	archive := filepath.Join(t.TempDir(), "slipway.oci.tar")
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE=slipway:deploy-test", "IMAGE_OCI="+archive)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	binaries, err := ociBinaries(archive, "slipway")
	if err != nil {
		t.Fatal(err)
	}
	for arch, machine := range imagePlatforms {
		b, ok := binaries["linux/"+arch]
		if !ok {
			t.Errorf("the image has no linux/%s variant (platforms: %v)", arch, sortedKeys(binaries))
			continue
		}
		checkELF(t, "image linux/"+arch, bytes.NewReader(b), machine)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// OCI image layout (https://github.com/opencontainers/image-spec): index.json and blobs/sha256/*.
type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	Layers []ociDescriptor `json:"layers"`
}

// ociBinaries reads an OCI image archive (docker buildx --output type=oci) and returns, per
// platform ("linux/arm64"), the file at /name in that platform's image.
func ociBinaries(archive, name string) (map[string][]byte, error) {
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		blobs[strings.TrimPrefix(h.Name, "./")] = b
	}
	blob := func(digest string) ([]byte, error) {
		algo, hex, _ := strings.Cut(digest, ":")
		b, ok := blobs["blobs/"+algo+"/"+hex]
		if !ok {
			return nil, fmt.Errorf("blob %s missing from the archive", digest)
		}
		return b, nil
	}
	var top ociIndex
	if err := json.Unmarshal(blobs["index.json"], &top); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	out := map[string][]byte{}
	var visit func(d ociDescriptor, depth int) error
	visit = func(d ociDescriptor, depth int) error {
		if depth > 4 {
			return errors.New("image indexes nested too deep")
		}
		b, err := blob(d.Digest)
		if err != nil {
			return err
		}
		if strings.Contains(d.MediaType, "index") || strings.Contains(d.MediaType, "manifest.list") {
			var idx ociIndex
			if err := json.Unmarshal(b, &idx); err != nil {
				return err
			}
			for _, m := range idx.Manifests {
				if err := visit(m, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if d.Platform == nil || d.Platform.OS == "unknown" {
			return nil // attestations
		}
		var m ociManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for _, l := range m.Layers {
			lb, err := blob(l.Digest)
			if err != nil {
				return err
			}
			if file, err := fileInLayer(lb, name); err != nil {
				return err
			} else if file != nil {
				out[d.Platform.OS+"/"+d.Platform.Architecture] = file
			}
		}
		return nil
	}
	for _, d := range top.Manifests {
		if err := visit(d, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fileInLayer returns the file at /name in a layer (a tar, gzip-compressed or not), or nil.
func fileInLayer(layer []byte, name string) ([]byte, error) {
	var r io.Reader = bytes.NewReader(layer)
	if len(layer) > 2 && layer[0] == 0x1f && layer[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/") == name && h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}
