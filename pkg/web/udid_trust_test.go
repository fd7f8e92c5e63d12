package web_test

// Issue 20, finding 8: /udid/callback took any self-signed answer to the public challenge, so
// anyone could add devices to, or rename devices in, the list admins send to Apple, and replay an
// answer for an hour. Answers are made here as a device makes them: CMS envelopes signed by a
// device identity issued by a CA the test makes and the server is told to trust (standing in for
// Apple iPhone Device CA), or self-signed, as an attacker can.

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/test/apptest"
)

type storedDevice struct {
	name       string
	unverified bool
}

func storedDeviceOf(t *testing.T, e *apptest.Env, udid string) storedDevice {
	t.Helper()
	var d storedDevice
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT name, unverified FROM devices WHERE udid = $1`, udid).Scan(&d.name, &d.unverified); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestUDIDAnswerTrust(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ca := profileservicetest.NewCA(t, "Test iPhone Device CA")
	e.Service.Devices.UDID.DeviceCAs = []*x509.Certificate{ca.Cert}
	admin := http.Header{"Authorization": {"Token " + e.AdminToken}}
	export := func() string {
		t.Helper()
		r := do(t, e, http.MethodGet, "/api/devices/export", nil, admin)
		if r.Status != 200 {
			t.Fatalf("export: %d %s", r.Status, r.Body)
		}
		return string(r.Body)
	}

	// A device's answer registers it, verified; the same answer again is refused, and so is
	// another answer to the same challenge.
	challenge := profileChallenge(t, e)
	answer := ca.SignedAnswer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "DEVICE_NAME": "QA iPhone", "CHALLENGE": challenge})
	if r := postAnswer(t, e, answer); r.Status != http.StatusMovedPermanently {
		t.Fatalf("a device's answer: %d %s", r.Status, r.Body)
	}
	if d := storedDeviceOf(t, e, testUDID); d.name != "QA iPhone" || d.unverified {
		t.Fatalf("a device's answer stored %+v", d)
	}
	if r := postAnswer(t, e, answer); r.Status != http.StatusUnprocessableEntity || r.Error(t) == "" {
		t.Errorf("the answer replayed: %d %s", r.Status, r.Body)
	}
	other := ca.SignedAnswer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "DEVICE_NAME": "Renamed", "CHALLENGE": challenge})
	if r := postAnswer(t, e, other); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("another answer to a used challenge: %d %s", r.Status, r.Body)
	}
	// Sent at once, one challenge is still taken once.
	fresh := profileChallenge(t, e)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		body := ca.SignedAnswer(t, map[string]string{"UDID": testUDID, "DEVICE_NAME": fmt.Sprintf("Race %d", i), "CHALLENGE": fresh})
		wg.Go(func() { statuses[i] = postAnswer(t, e, body).Status })
	}
	wg.Wait()
	taken := 0
	for _, s := range statuses {
		switch s {
		case http.StatusMovedPermanently:
			taken++
		case http.StatusUnprocessableEntity:
		default:
			t.Errorf("concurrent answers: status %d", s)
		}
	}
	if taken != 1 {
		t.Errorf("one challenge sent %d times at once was taken %d times (%v)", n, taken, statuses)
	}
	verifiedName := storedDeviceOf(t, e, testUDID).name

	// A self-signed answer to a fresh challenge cannot rename the verified device...
	forged := profileservicetest.Answer(t, map[string]string{"UDID": testUDID, "DEVICE_NAME": "Attacker's name", "CHALLENGE": profileChallenge(t, e)})
	if r := postAnswer(t, e, forged); r.Status != http.StatusMovedPermanently {
		t.Fatalf("a self-signed answer about a known device: %d %s", r.Status, r.Body)
	}
	if d := storedDeviceOf(t, e, testUDID); d.name != verifiedName || d.unverified {
		t.Errorf("a self-signed answer changed the verified device: %+v, was %q", d, verifiedName)
	}
	// ...and a new device it adds waits for an admin, out of the export.
	const strange = "00008101-000A1B2C3D4E5F60"
	forged = profileservicetest.Answer(t, map[string]string{"UDID": strange, "DEVICE_NAME": "Unknown iPhone", "CHALLENGE": profileChallenge(t, e)})
	if r := postAnswer(t, e, forged); r.Status != http.StatusMovedPermanently {
		t.Fatalf("a self-signed answer: %d %s", r.Status, r.Body)
	}
	if d := storedDeviceOf(t, e, strange); !d.unverified {
		t.Errorf("a self-signed answer registered a verified device: %+v", d)
	}
	if page := get(t, e, "/udid/"+strange); page.Status != 200 || !strings.Contains(string(page.Body), `id="device-unverified"`) {
		t.Errorf("the unverified device's page: %d %s", page.Status, page.Body)
	}
	if page := get(t, e, "/udid/"+testUDID); strings.Contains(string(page.Body), `id="device-unverified"`) {
		t.Errorf("the verified device's page says it is unverified")
	}
	if got := do(t, e, http.MethodGet, "/api/devices/"+strange, nil, admin); got.Status != 200 || got.Map(t)["verified"] != false {
		t.Errorf("the API shows the unverified device as %d %s", got.Status, got.Body)
	}
	if ex := export(); strings.Contains(ex, strange) || !strings.Contains(ex, testUDID) {
		t.Errorf("export before approval:\n%s", ex)
	}

	// An admin approves it (an upload token may not); then it is exported, and the approval is audited.
	upload := http.Header{"Authorization": {"Token " + e.UploadToken}}
	if r := do(t, e, http.MethodPost, "/api/devices/"+strange+"/approve", nil, upload); r.Status != http.StatusForbidden {
		t.Errorf("approval with an upload token: %d", r.Status)
	}
	if r := do(t, e, http.MethodPost, "/api/devices/00008101-000A1B2C3D4E5F61/approve", nil, admin); r.Status != http.StatusNotFound {
		t.Errorf("approving an unknown device: %d", r.Status)
	}
	r := do(t, e, http.MethodPost, "/api/devices/"+strings.ToLower(strange)+"/approve", nil, admin)
	if r.Status != 200 || r.Map(t)["verified"] != true {
		t.Fatalf("approval: %d %s", r.Status, r.Body)
	}
	if ex := export(); !strings.Contains(ex, strange+"\tUnknown iPhone\t") {
		t.Errorf("export after approval:\n%s", ex)
	}
	var audited int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'device.approve' AND target = $1
		AND actor_kind = 'token' AND actor_name = 'admin'`, strange).Scan(&audited); err != nil || audited != 1 {
		t.Errorf("approval audited %d times (%v)", audited, err)
	}
}
