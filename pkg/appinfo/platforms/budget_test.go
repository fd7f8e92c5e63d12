package platforms_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// A reservation waits while the budget is taken (it is not refused), in order of arrival, and
// gives up when its context ends; one over the whole budget is refused at once.
func TestBudgetWaits(t *testing.T) {
	b := appinfo.NewBudget(100)
	ctx := context.Background()
	first, err := b.Reserve(ctx, 80, "first")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *appinfo.Reservation)
	go func() {
		r, err := b.Reserve(ctx, 50, "second")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	for b.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-got:
		t.Fatal("the second reservation did not wait for the first")
	default:
	}
	if first.TryGrow(90) {
		t.Error("TryGrow took bytes someone waits for")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Reserve(cctx, 30, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait returned %v", err)
	}
	first.Shrink(40)
	second := <-got
	if b.Held() != 90 {
		t.Errorf("held %d, want 90", b.Held())
	}
	first.Release()
	first.Release()
	second.Release()
	if b.Held() != 0 {
		t.Errorf("held %d after every release", b.Held())
	}
	if r, err := b.Reserve(ctx, 100, "all"); err != nil || !r.TryGrow(100) {
		t.Errorf("the whole budget: %v", err)
	} else {
		r.Release()
	}
	_, err = b.Reserve(ctx, 101, "the package's parse")
	if errs.KindOf(err) != errs.Invalid {
		t.Errorf("a reservation over the budget: %v, want errs.Invalid", err)
	}
	var nilBudget *appinfo.Budget
	if r, err := nilBudget.Reserve(ctx, 1<<40, "x"); err != nil || r != nil {
		t.Errorf("a nil budget: %v", err)
	}
}

// ParseWithin parses what Parse does, gives its reservation back, and refuses a package whose
// bound is over the whole budget with an errs.Invalid error that says so; a package that waits
// gets its turn.
func TestParseWithin(t *testing.T) {
	m := androidtest.AndroidManifest{Package: "com.example.budget", VersionCode: 3, VersionName: "1.3", LabelStrings: map[string]string{"": "Budget"},
		Icons: []androidtest.AndroidIcon{{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(192, 192)}}}
	apk := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m})
	want, err := appinfo.Parse(bytes.NewReader(apk), int64(len(apk)))
	if err != nil {
		t.Fatal(err)
	}
	bound, err := appinfo.Bound(bytes.NewReader(apk), int64(len(apk)))
	if err != nil {
		t.Fatal(err)
	}
	if bound > 8<<20 {
		t.Errorf("a %d-byte APK is bounded at %d bytes", len(apk), bound)
	}
	b := appinfo.NewBudget(64 << 20)
	got, err := appinfo.ParseWithin(context.Background(), b, bytes.NewReader(apk), int64(len(apk)), 0)
	if err != nil || got.BundleID != want.BundleID || got.ReleaseVersion != want.ReleaseVersion {
		t.Fatalf("ParseWithin: %+v, %v; Parse: %+v", got, err, want)
	}
	if b.Held() != 0 {
		t.Errorf("held %d after the parse", b.Held())
	}

	// Held by someone else: the parse waits for it, then runs.
	hold, _ := b.Reserve(context.Background(), 64<<20, "hold")
	done := make(chan error, 1)
	go func() {
		_, err := appinfo.ParseWithin(context.Background(), b, bytes.NewReader(apk), int64(len(apk)), 0)
		done <- err
	}()
	for b.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	hold.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// 64 MiB of deflated zeros as resources.arsc: a bound over a 32 MiB budget.
	bomb := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m, Resources: make([]byte, 64<<20)})
	_, err = appinfo.ParseWithin(context.Background(), appinfo.NewBudget(32<<20), bytes.NewReader(bomb), int64(len(bomb)), 0)
	testkitWantInvalid(t, err, "more than this server gives all parses together")
}

func testkitWantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if errs.KindOf(err) != errs.Invalid || err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("error %v, want errs.Invalid saying %q", err, want)
	}
}
