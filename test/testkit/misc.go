package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a child process that
// must be told its address before it starts. (A server in this process should listen on port 0
// instead, which leaves no window for another process to take the port.)
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RandomHex returns n random bytes in hex (2n characters): names of databases, buckets, secrets
// and multipart boundaries that no other test run picks.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WantKind fails the test unless err is of kind (errs.KindOf) and its message contains each of
// want.
func WantKind(t testing.TB, err error, kind errs.Kind, want ...string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("no error; want an errs.%s error mentioning %q", kindName(kind), want)
	case errs.KindOf(err) != kind:
		t.Fatalf("error %q is errs.%s, want errs.%s", err, kindName(errs.KindOf(err)), kindName(kind))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// WantInvalid is WantKind for errs.Invalid: what a parser returns for a package it refuses.
func WantInvalid(t testing.TB, err error, want ...string) {
	t.Helper()
	WantKind(t, err, errs.Invalid, want...)
}

func kindName(k errs.Kind) string {
	names := map[errs.Kind]string{errs.Internal: "Internal", errs.Invalid: "Invalid", errs.NotFound: "NotFound",
		errs.Conflict: "Conflict", errs.Unauthenticated: "Unauthenticated", errs.Forbidden: "Forbidden",
		errs.TooLarge: "TooLarge", errs.Unavailable: "Unavailable", errs.TooManyRequests: "TooManyRequests",
		errs.Unsupported: "Unsupported"}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}
