package android_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// TestAndroidPermissionsFixtures: uses-permission names of the real packages (the README lists
// appinfodemo's; politedroid's are the two its manifest's string pool holds), and the ABIs of
// lib/<abi>/ folders (none of them carries native code).
func TestAndroidPermissionsFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"android/appinfodemo-2.1.0-10.apk", []string{"android.permission.ACCESS_NETWORK_STATE"}},
		{"android/appinfodemo-2.1.0-10.aab", []string{"android.permission.ACCESS_NETWORK_STATE"}},
		{"android/politedroid-1.3-4.apk", []string{"android.permission.READ_CALENDAR", "android.permission.RECEIVE_BOOT_COMPLETED"}},
		{"android/appinfoweardemo-wear-1.0-1.apk", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := fixtures.Read(t, tc.file)
			info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(info.Permissions, tc.want) {
				t.Errorf("Permissions = %q, want %q", info.Permissions, tc.want)
			}
			if len(info.Architectures) != 0 {
				t.Errorf("Architectures = %q, want none", info.Architectures)
			}
		})
	}
}

// TestAndroidPermissionsSynthetic: both encodings, in order, without repeats; ABIs from
// lib/<abi>/ (each module's in a bundle), sorted.
func TestAndroidPermissionsSynthetic(t *testing.T) {
	m := androidtest.AndroidManifest{Package: "com.example.p", Permissions: []string{
		"android.permission.INTERNET", "android.permission.CAMERA", "android.permission.INTERNET"}}
	so := []byte("\x7fELF")
	for _, tc := range []struct {
		name     string
		data     []byte
		wantABIs []string
	}{
		{"apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m, Entries: []androidtest.AndroidEntry{
			{Name: "lib/x86_64/libapp.so", Data: so}, {Name: "lib/arm64-v8a/libapp.so", Data: so}, {Name: "lib/arm64-v8a/libother.so", Data: so},
			{Name: "lib/README", Data: so}, {Name: "lib/bad abi/libx.so", Data: so}, {Name: "assets/lib/x86/liby.so", Data: so},
		}}), []string{"arm64-v8a", "x86_64"}},
		{"aab", androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: m, Entries: []androidtest.AndroidEntry{
			{Name: "base/lib/armeabi-v7a/libapp.so", Data: so}, {Name: "feature/lib/x86/libf.so", Data: so}, {Name: "lib/x86_64/libroot.so", Data: so},
		}}), []string{"armeabi-v7a", "x86"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := appinfo.Parse(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"android.permission.INTERNET", "android.permission.CAMERA"}; !slices.Equal(info.Permissions, want) {
				t.Errorf("Permissions = %q, want %q", info.Permissions, want)
			}
			if !slices.Equal(info.Architectures, tc.wantABIs) {
				t.Errorf("Architectures = %q, want %q", info.Architectures, tc.wantABIs)
			}
		})
	}
}

// TestAndroidPermissionsCapped: a manifest declaring thousands of permissions keeps
// androidMaxPermissions of them, each name cut at androidMaxPermissionText bytes.
func TestAndroidPermissionsCapped(t *testing.T) {
	var perms []string
	for i := range 2000 {
		perms = append(perms, fmt.Sprintf("p.%04d.%s", i, bytes.Repeat([]byte{'x'}, 300)))
	}
	data := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.p", Permissions: perms}})
	info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Permissions) != 512 {
		t.Fatalf("%d permissions kept", len(info.Permissions))
	}
	for _, p := range info.Permissions {
		if len(p) > 256 {
			t.Fatalf("a %d-byte permission kept", len(p))
		}
	}
}
