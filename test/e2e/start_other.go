//go:build !linux

package e2e

import "os/exec"

// startCmd starts cmd. Only Linux can have children killed when the test process dies.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
