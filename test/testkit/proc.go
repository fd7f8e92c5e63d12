package testkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Memory is a process's resident set, from /proc/<pid>/status, in bytes.
type Memory struct {
	RSS int64 // VmRSS: resident now
	HWM int64 // VmHWM: the lifetime peak of RSS
}

// procPath names a file of /proc for pid, or for this process when pid is 0.
func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}

// ReadMemory reads VmRSS and VmHWM of process pid (0: this process).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(procPath(pid, "status"))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	var seen int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		fields := strings.Fields(v) // "12345 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return Memory{}, fmt.Errorf("%s: %s %q", procPath(pid, "status"), k, v)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("%s: %s %q: %w", procPath(pid, "status"), k, v, err)
		}
		if k == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if seen != 2 {
		return Memory{}, fmt.Errorf("%s has no VmRSS or VmHWM (a kernel thread, or a zombie)", procPath(pid, "status"))
	}
	return m, nil
}

// PeakRSS is process pid's peak resident memory (VmHWM) in bytes. It skips the test where /proc
// is absent and fails it where the figure cannot be read.
func PeakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	return mustMemory(t, pid).HWM
}

// RSS is process pid's resident memory now (VmRSS) in bytes, as PeakRSS.
func RSS(t testing.TB, pid int) int64 {
	t.Helper()
	return mustMemory(t, pid).RSS
}

func mustMemory(t testing.TB, pid int) Memory {
	t.Helper()
	skipWithoutProc(t)
	m, err := ReadMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func skipWithoutProc(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
}

// ClockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux platform Go
// supports.
const ClockTicks = 100

// CPUTime is the user and system CPU time process pid (0: this process) has used, from
// /proc/<pid>/stat: every thread's, including threads that have ended, in steps of 1/ClockTicks
// of a second. CPU time is what a test may bound where it may not bound wall time: a busy machine
// makes a process wait longer, not work more.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command, in parentheses, may hold spaces; after it: state(0) ppid(1) ... utime(11)
	// stime(12).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command in %q", procPath(pid, "stat"), b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields", procPath(pid, "stat"), len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: %w", procPath(pid, "stat"), err)
	}
	return time.Duration(ut+st) * (time.Second / ClockTicks), nil
}

// CPU is CPUTime for a test: it skips the test where /proc is absent and fails it where the
// figure cannot be read.
func CPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	skipWithoutProc(t)
	d, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// SchedCPUTime is the CPU time of process pid's living threads to the nanosecond: the sum of the
// scheduler's run time (/proc/<pid>/task/*/schedstat), exact for runs shorter than CPUTime's
// ticks. Threads that have ended are not counted (Go rarely ends one), so it suits measurements
// of short runs (test/bench), and CPUTime suits bounds. Without schedstat it is CPUTime.
func SchedCPUTime(pid int) (time.Duration, error) {
	d, _, err := SchedStat(pid)
	return d, err
}

// SchedStat is SchedCPUTime and the number of times the scheduler put one of the process's
// living threads on a CPU (the third field of schedstat): its context switches in. Without
// schedstat it is CPUTime and 0.
func SchedStat(pid int) (time.Duration, int64, error) {
	tasks, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return 0, 0, err
	}
	var total, runs int64
	read := false
	for _, task := range tasks {
		b, err := os.ReadFile(procPath(pid, "task/"+task.Name()+"/schedstat"))
		if err != nil {
			continue // the thread ended, or the kernel keeps no schedstat
		}
		if f := strings.Fields(string(b)); len(f) == 3 {
			ns, err1 := strconv.ParseInt(f[0], 10, 64)
			n, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 == nil && err2 == nil {
				total, runs, read = total+ns, runs+n, true
			}
		}
	}
	if !read {
		d, err := CPUTime(pid)
		return d, 0, err
	}
	return time.Duration(total), runs, nil
}

// SelfCPU is this process's user and system CPU time (getrusage), to the microsecond.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// IO is a process's input and output so far, from /proc/<pid>/io.
type IO struct {
	RChar, WChar int64 // bytes read and written through system calls (files, sockets, pipes)
	SyscR, SyscW int64 // read and write system calls
}

// ReadIO reads /proc/<pid>/io (0: this process).
func ReadIO(pid int) (IO, error) {
	b, err := os.ReadFile(procPath(pid, "io"))
	if err != nil {
		return IO{}, err
	}
	var io IO
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return IO{}, fmt.Errorf("%s: %s: %w", procPath(pid, "io"), k, err)
		}
		switch k {
		case "rchar":
			io.RChar = n
		case "wchar":
			io.WChar = n
		case "syscr":
			io.SyscR = n
		case "syscw":
			io.SyscW = n
		}
	}
	return io, nil
}

// ProcIO is ReadIO for a test: it skips the test where /proc/<pid>/io cannot be read (absent, or
// not permitted).
func ProcIO(t testing.TB, pid int) IO {
	t.Helper()
	io, err := ReadIO(pid)
	if err != nil {
		t.Skipf("no /proc/<pid>/io: %v", err)
	}
	return io
}
