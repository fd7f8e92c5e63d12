package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/test/apptest"
)

// BenchmarkConsolePages measures the console's heaviest pages over loopback HTTP, for an admin:
// the home (apps, the newest uploads) and an app's page with 5 channels of 10 builds each (every
// channel's builds, retention rules and plan, webhooks; the members). Run with
// `bash test/with-services.sh go test -run '^$' -bench ConsolePages ./pkg/web/`.
func BenchmarkConsolePages(b *testing.B) {
	e := apptest.New(b, apptest.Options{})
	ctx := context.Background()
	secret, _, err := e.Service.Logins.SignIn(ctx, access.Identity{Issuer: "https://idp.example", Subject: "alice",
		Email: "alice@example.com", Name: "Alice", EmailVerified: true, Groups: []string{"admins"}}, testSignIn)
	if err != nil {
		b.Fatal(err)
	}
	var appID int64
	for ch := range 5 {
		for n := range 10 {
			rel := e.UploadApp(b, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor",
				Version: fmt.Sprintf("1.%d", n), Build: fmt.Sprint(n + 1)}), apptest.Field("release_type", fmt.Sprintf("type%d", ch)))
			appID = int64(rel["app"].(map[string]any)["id"].(float64))
		}
	}
	client := &http.Client{}
	get := func(path string) {
		req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "slipway_session", Value: secret})
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	for name, path := range map[string]string{"home": "/console", "app": fmt.Sprintf("/console/apps/%d", appID),
		"devices": "/console/devices", "audit": "/console/audit"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				get(path)
			}
		})
	}
}
