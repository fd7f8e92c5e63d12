package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/uploader"
)

func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		url  string
	}{
		{[]string{"app.ipa", "--url", "http://a"}, "app.ipa", "http://a"},
		{[]string{"--url", "http://a", "app.ipa"}, "app.ipa", "http://a"},
		{[]string{"--url=http://a", "app.ipa", "--", "-odd.ipa"}, "app.ipa,-odd.ipa", "http://a"},
		{[]string{"a.ipa", "b.ipa"}, "a.ipa,b.ipa", ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		u := fs.String("url", "", "")
		pos, err := parseInterspersed(fs, c.args)
		if err != nil || strings.Join(pos, ",") != c.pos || *u != c.url {
			t.Errorf("%q: pos %q url %q err %v", c.args, pos, *u, err)
		}
	}
}

func TestParseCustomField(t *testing.T) {
	for in, want := range map[string]uploader.CustomField{
		"QA=passed":         {Name: "QA", Value: "passed"},
		"URL=https://x?a=b": {Name: "URL", Value: "https://x?a=b"},
		"Empty=":            {Name: "Empty"},
		`{"name":"QA","value":"ok","icon":"fa fa-check"}`: {Name: "QA", Value: "ok", Icon: "fa fa-check"},
	} {
		got, err := parseCustomField(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"novalue", "=value", `{"name":"QA","colour":"red"}`, `{"value":"x"}`, `{"name":`} {
		if _, err := parseCustomField(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestUploadUsage checks command-line mistakes: exit 2 before any request, and the environment
// fallbacks for --url and --token.
func TestUploadUsage(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"upload"}, nil, "exactly one FILE"},
		{[]string{"upload", "a.ipa"}, nil, "--url (or SLIPWAY_URL) is required"},
		{[]string{"upload", "a.ipa"}, map[string]string{"SLIPWAY_URL": "http://x"}, "--token (or SLIPWAY_TOKEN) is required"},
		{[]string{"upload", "a.ipa", "--progress", "loud"}, map[string]string{"SLIPWAY_URL": "http://x", "SLIPWAY_TOKEN": "t"}, "--progress must be"},
		{[]string{"upload", "a.ipa", "--changelog", "x", "--changelog-file", "y"}, nil, "not both"},
		{[]string{"upload", "a.ipa", "--custom-field", "x"}, nil, "NAME=VALUE"},
		{[]string{"upload", "a.ipa", "--notify", "false"}, nil, `takes its value after "=": --notify=false`},
		{[]string{"distribute", "--release", "9", "--notify", "false"}, nil, `takes its value after "=": --notify=false`},
		{[]string{"debug-file"}, nil, "want: slipway debug-file upload"},
		{[]string{"debug-file", "upload", "a.zip"}, nil, "--channel-key is required"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, env(c.env), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	// Asked-for help goes to stdout (TestHelpOfEveryCommand).
	if code := run(context.Background(), []string{"upload", "-h"}, env(nil), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--custom-field") {
		t.Errorf("upload -h: exit %d, %q", code, stdout.String())
	}
	// A missing file fails before any request (and before any progress output).
	code := run(context.Background(), []string{"upload", "/nonexistent.ipa", "--url", "http://127.0.0.1:1", "--token", "secret-token"}, env(nil), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "no such file") || strings.Contains(stderr.String(), "secret-token") {
		t.Errorf("missing file: exit %d, %q", code, stderr.String())
	}
}
