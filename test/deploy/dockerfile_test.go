package deploy

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goBuild is one `go build` command line, parsed.
type goBuild struct {
	env      map[string]string // NAME=VALUE words before `go`
	flags    map[string]string // -flag -> value ("" for boolean flags), -o left out
	packages []string
}

// flagsWithValue are the go build flags that take the next word as their value.
var flagsWithValue = map[string]bool{
	"-o": true, "-ldflags": true, "-gcflags": true, "-asmflags": true, "-tags": true, "-mod": true,
	"-buildmode": true, "-pgo": true, "-p": true, "-overlay": true, "-installsuffix": true, "-toolexec": true,
}

// platformEnv selects the target platform (multi-arch image builds); it is not a build flag.
var platformEnv = map[string]bool{"GOOS": true, "GOARCH": true, "GOARM": true, "GOAMD64": true}

// shellWords splits a command line like a POSIX shell would for simple quoting (no expansion).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var envWord = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// parseGoBuild parses `[NAME=VALUE ...] go build FLAGS PACKAGES` (the go command may be a
// variable reference such as ${GO}).
func parseGoBuild(line string) (goBuild, error) {
	words, err := shellWords(line)
	if err != nil {
		return goBuild{}, err
	}
	b := goBuild{env: map[string]string{}, flags: map[string]string{}}
	i := 0
	for ; i < len(words) && envWord.MatchString(words[i]); i++ {
		name, value, _ := strings.Cut(words[i], "=")
		if !platformEnv[name] {
			b.env[name] = value
		}
	}
	if i+1 >= len(words) || words[i+1] != "build" {
		return b, fmt.Errorf("not a go build command: %q", line)
	}
	for i += 2; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			b.packages = append(b.packages, w)
			continue
		}
		name, value, hasValue := strings.Cut(w, "=")
		name = "-" + strings.TrimLeft(name, "-")
		if !hasValue && flagsWithValue[name] {
			if i+1 >= len(words) {
				return b, fmt.Errorf("%s without a value", name)
			}
			i++
			value = words[i]
		}
		if name != "-o" {
			b.flags[name] = value
		}
	}
	return b, nil
}

var (
	makeRef   = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	shellRef  = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	makeAssig = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(:=|\?=|=)\s*(.*)$`)
)

// makefileBuildLine returns the Makefile's `build` recipe line running go build, with the
// Makefile's own variables expanded except those computed by the shell (VERSION, COMMIT), which
// become ${NAME} as in the Dockerfile.
func makefileBuildLine(t *testing.T) string {
	t.Helper()
	text := strings.ReplaceAll(readFile(t, filepath.Join(repoRoot(t), "Makefile")), "\\\n", " ")
	vars := map[string]string{}
	var recipe []string
	inBuild := false
	for _, line := range strings.Split(text, "\n") {
		if m := makeAssig.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "\t") {
			vars[m[1]] = strings.TrimSpace(m[3])
			continue
		}
		switch {
		case strings.HasPrefix(line, "build:"):
			inBuild = true
		case inBuild && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, strings.TrimSpace(line))
		case inBuild && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#"):
			inBuild = false
		}
	}
	var line string
	for _, r := range recipe {
		if strings.Contains(r, " build ") {
			line = r
		}
	}
	if line == "" {
		t.Fatal("Makefile: no go build line in the build target")
	}
	for range 10 {
		line = makeRef.ReplaceAllStringFunc(line, func(ref string) string {
			name := makeRef.FindStringSubmatch(ref)[1]
			v, ok := vars[name]
			if !ok || strings.Contains(v, "$(shell") {
				return "${" + name + "}"
			}
			return v
		})
	}
	return line
}

// dockerfile is the Dockerfile's instructions, continuation lines joined, comments dropped.
type instruction struct{ cmd, args string }

func dockerfileInstructions(t *testing.T) []instruction {
	t.Helper()
	text := readFile(t, filepath.Join(repoRoot(t), "Dockerfile"))
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// The Dockerfile builds with the Makefile's go build flags: CGO_ENABLED, -trimpath, -ldflags with
// the same -s -w and -X stamps, the same package.
func TestDockerfileBuildMatchesMakefile(t *testing.T) {
	mk, err := parseGoBuild(makefileBuildLine(t))
	if err != nil {
		t.Fatalf("Makefile: %v", err)
	}
	var runs []string
	for _, in := range dockerfileInstructions(t) {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			runs = append(runs, in.args)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("Dockerfile: want one RUN with go build, got %d", len(runs))
	}
	// Drop RUN's own options (--mount=...), then normalise $VAR to ${VAR}.
	words := strings.Fields(runs[0])
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		words = words[1:]
	}
	line := shellRef.ReplaceAllString(strings.Join(words, " "), "$${$1}")
	df, err := parseGoBuild(line)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	t.Logf("Makefile:   env %v flags %v packages %v", mk.env, mk.flags, mk.packages)
	t.Logf("Dockerfile: env %v flags %v packages %v", df.env, df.flags, df.packages)
	if !reflect.DeepEqual(mk.env, df.env) {
		t.Errorf("environment differs: Makefile %v, Dockerfile %v", mk.env, df.env)
	}
	if mk.env["CGO_ENABLED"] != "0" {
		t.Errorf("Makefile builds with CGO_ENABLED=%q, want 0 (static binary)", mk.env["CGO_ENABLED"])
	}
	if !reflect.DeepEqual(mk.flags, df.flags) {
		t.Errorf("go build flags differ:\n  Makefile   %q\n  Dockerfile %q", mk.flags, df.flags)
	}
	if !reflect.DeepEqual(mk.packages, df.packages) {
		t.Errorf("packages differ: Makefile %v, Dockerfile %v", mk.packages, df.packages)
	}
	ld := df.flags["-ldflags"]
	for _, want := range []string{
		"-X github.com/slipwayhq/slipway/pkg/buildinfo.Version=${VERSION}",
		"-X github.com/slipwayhq/slipway/pkg/buildinfo.Commit=${COMMIT}",
	} {
		if !strings.Contains(ld, want) {
			t.Errorf("-ldflags %q lacks %q", ld, want)
		}
	}
}

// The image: distroless or scratch, non-root, port 8080, no HEALTHCHECK, /slipway serve, version
// and commit from build args, the toolchain go.mod asks for.
func TestDockerfileImage(t *testing.T) {
	ins := dockerfileInstructions(t)
	var froms []string
	stageArgs := map[int]map[string]bool{} // stage -> ARGs declared in it
	var user, expose, entrypoint, cmd string
	goVersion := ""
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			if len(froms) == 0 && name == "GO_VERSION" {
				goVersion = def
			}
			if stageArgs[len(froms)] == nil {
				stageArgs[len(froms)] = map[string]bool{}
			}
			stageArgs[len(froms)][name] = true
		case "USER":
			user = in.args
		case "EXPOSE":
			expose = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmd = in.args
		case "HEALTHCHECK":
			t.Error("Dockerfile has a HEALTHCHECK: probes belong to Kubernetes (and compose)")
		case "RUN":
			if strings.Contains(in.args, "go build") {
				for _, a := range []string{"VERSION", "COMMIT"} {
					if !stageArgs[len(froms)][a] {
						t.Errorf("ARG %s is not declared in the build stage before go build", a)
					}
				}
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got FROM %v", froms)
	}
	final := froms[len(froms)-1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("runtime image %q, want distroless/static or scratch", final)
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric non-root user (Kubernetes' runAsNonRoot checks it)", user)
	}
	if expose != "8080" {
		t.Errorf("EXPOSE %q, want 8080", expose)
	}
	if entrypoint != `["/slipway"]` || cmd != `["serve"]` {
		t.Errorf("ENTRYPOINT %s CMD %s, want [\"/slipway\"] [\"serve\"]", entrypoint, cmd)
	}

	// The builder's Go is at least what go.mod asks for.
	gomod := readFile(t, filepath.Join(repoRoot(t), "go.mod"))
	want := ""
	for _, line := range strings.Split(gomod, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "go" && want == "" {
			want = f[1]
		}
		if len(f) == 2 && f[0] == "toolchain" {
			want = strings.TrimPrefix(f[1], "go")
		}
	}
	if goVersion == "" || compareVersions(goVersion, want) < 0 {
		t.Errorf("Dockerfile GO_VERSION %q is older than go.mod's %q", goVersion, want)
	}
}

// compareVersions compares dotted numeric versions (1.26.8).
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// .dockerignore sends only go.mod, go.sum, cmd/, pkg/ and migrations/: every package of the
// module that the binary is built from must live there, and no embedded file in excluded test data.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	root := repoRoot(t)
	ignore := readFile(t, filepath.Join(root, ".dockerignore"))
	kept := map[string]bool{}
	excludesAll := false
	for _, line := range strings.Split(ignore, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "*":
			excludesAll = true
		case strings.HasPrefix(line, "!"):
			kept[strings.TrimSuffix(strings.TrimPrefix(line, "!"), "/")] = true
		}
	}
	// keeps reports whether a kept pattern covers path (a folder pattern, or a file glob).
	keeps := func(path string) bool {
		for p := range kept {
			if p == path || strings.HasPrefix(path, p+"/") {
				return true
			}
			if ok, _ := filepath.Match(p, path); ok {
				return true
			}
		}
		return false
	}
	if !excludesAll {
		t.Fatal(".dockerignore does not start from excluding everything (*)")
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if !kept[f] {
			t.Errorf(".dockerignore does not keep %s", f)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles \",\"}}|{{join .EmbedFiles \",\"}}{{end}}{{end}}", "./cmd/slipway")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.Split(line, "|")
		rel, err := filepath.Rel(root, parts[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(strings.Split(parts[1], ","), strings.Split(parts[2], ",")...) {
			if f == "" {
				continue
			}
			path := filepath.ToSlash(filepath.Join(rel, f))
			if !keeps(path) || strings.Contains(path, "/testdata/") || strings.HasSuffix(path, "_test.go") {
				t.Errorf("the binary is built from %s, which .dockerignore leaves out of the build context", path)
			}
		}
	}
}
