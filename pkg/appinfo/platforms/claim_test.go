package platforms_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
)

// TestClaimPlatform: the platform of a package from its first 4 KiB and, for a zip, its central
// directory to its end (what the upload box's script sends, issue 34); unsure when the bytes
// given do not hold what the claims read, or no family claims the file.
func TestClaimPlatform(t *testing.T) {
	ends := func(b []byte) ([]byte, []byte) {
		head := b[:min(len(b), 4096)]
		if !bytes.HasPrefix(b, []byte("PK")) {
			return head, b[max(0, len(b)-4096):]
		}
		end := bytes.LastIndex(b, []byte("PK\x05\x06"))
		dir := binary.LittleEndian.Uint32(b[end+16:])
		return head, b[min(int(dir), max(0, len(b)-(65535+22))):]
	}
	big := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1", Build: "1", FillerBytes: 1 << 20})
	for _, c := range []struct {
		name string
		file []byte
		want appinfo.Platform
	}{
		{"apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.a", VersionName: "1", VersionCode: 1}}), appinfo.Android},
		{"ipa", big, appinfo.IOS},
		{"macos zip", appletest.BuildMacZip(appletest.MacZipOptions{}), appinfo.MacOS},
		{"text", []byte("hello, this is no build at all\n"), ""},
	} {
		head, tail := ends(c.file)
		got, ok := appinfo.ClaimPlatform(head, tail, int64(len(c.file)))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %v, want %q", c.name, got, ok, c.want)
		}
	}
	// Only the last 4 KiB of a large zip: its directory is not all there, so unsure.
	if got, ok := appinfo.ClaimPlatform(big[:4096], big[len(big)-64:], int64(len(big))); ok {
		t.Errorf("a zip without its whole directory: %q, sure", got)
	}
}
