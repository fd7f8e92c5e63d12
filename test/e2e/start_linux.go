package e2e

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// spawner starts child processes from one OS thread that never exits. Pdeathsig is tied to the
// thread that forked the child, not to the process: a child started from an ordinary goroutine
// would be killed whenever the runtime retired that thread. With the thread locked for good, the
// signal comes only when the test process dies (a `go test -timeout` panic, a ^C), and no server
// outlives it.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startCmd starts cmd so that it is killed if the test process dies.
func startCmd(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: see spawner
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd, done}
	return <-done
}
