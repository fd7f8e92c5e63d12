package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/docs"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
)

// TestFeedbackFromTheKotlinExample compiles the Kotlin example of docs/feedback.md as it is
// written, with Debian's kotlinc (test/kotlin.sh), and runs it against a server: an app's report
// with a screenshot, on a channel open to anyone, by channel key and versions.
func TestFeedbackFromTheKotlinExample(t *testing.T) {
	kotlinc := os.Getenv("SLIPWAY_TEST_KOTLINC")
	if kotlinc == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_KOTLINC is not set: run the tests with test/with-services.sh (make test)")
		}
		t.Skip("no kotlinc: run the tests with test/with-services.sh (make test)")
	}
	guide, err := docs.Guides.ReadFile("feedback.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(guide), "```kotlin\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/feedback.md has no Kotlin example")
	}
	dir := t.TempDir()
	src := example + `
fun main(args: Array<String>) {
    sendFeedback(args[0], args[1], args[2], args[3], "Sent from Kotlin", "JVM", "Linux", java.io.File(args[4]).readBytes())
}
`
	if err := os.WriteFile(filepath.Join(dir, "Feedback.kt"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "screen.png")
	if err := os.WriteFile(png, imagetest.PNG(t, 120, 240), 0o644); err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(dir, "feedback.jar")
	if out, err := exec.CommandContext(t.Context(), kotlinc, filepath.Join(dir, "Feedback.kt"), "-include-runtime", "-d", jar).CombinedOutput(); err != nil {
		t.Fatalf("kotlinc: %v\n%s", err, out)
	}

	m := newMgmt(t, apptest.Options{})
	_, _, _, first := m.fixture()
	if out, err := exec.CommandContext(t.Context(), "java", "-jar", jar, m.e.URL, "harbor-ios", "1.0", "1", png).CombinedOutput(); err != nil {
		t.Fatalf("the Kotlin example: %v\n%s", err, out)
	}
	list, total, err := m.e.Service.Feedback.OnRelease(apptest.AsSystem(context.Background()), id(first), distribution.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 {
		t.Fatalf("the build's feedback: %d (%v)", total, err)
	}
	if f := list[0]; f.Text != "Sent from Kotlin" || f.Device != "JVM" || f.OSVersion != "Linux" || len(f.Screenshots) != 1 ||
		f.Screenshots[0].Width != 120 || f.Source != "api" {
		t.Errorf("the report: %+v", f)
	}
}
