// Package buildinfo carries the version and commit stamped into the binary at link time:
//
//	go build -ldflags "-X github.com/slipwayhq/slipway/pkg/buildinfo.Version=1.2.3 -X github.com/slipwayhq/slipway/pkg/buildinfo.Commit=abc123"
package buildinfo

import "runtime/debug"

// Version and Commit are set by -ldflags; they stay "dev" and the VCS revision otherwise.
var (
	Version = "dev"
	Commit  = ""
)

// APIVersion is the version of Zealot's API that Slipway speaks (api.md).
const APIVersion = "5.3.6"

// CommitOrVCS returns Commit, or the revision Go's toolchain recorded when it is unset.
func CommitOrVCS() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
