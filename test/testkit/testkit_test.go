package testkit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// fakeT records what a helper reports; Fatalf ends the goroutine as testing.T's does.
type fakeT struct {
	testing.TB
	mu     sync.Mutex
	msgs   []string
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs, f.failed = append(f.msgs, fmt.Sprintf(format, args...)), true
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}
func (f *fakeT) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// run calls fn with a fakeT on a goroutine of its own (Fatalf ends it) and returns the messages.
func run(fn func(t *fakeT)) (bool, string) {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.failed, strings.Join(f.msgs, "\n")
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	failed, msg := run(func(f *fakeT) {
		Eventually(f, time.Minute, "the third look", func() bool { return n.Add(1) == 3 })
	})
	if failed || n.Load() != 3 {
		t.Errorf("a condition true on the third look: failed %v (%s), %d looks", failed, msg, n.Load())
	}
	failed, msg = run(func(f *fakeT) { Eventually(f, 30*time.Millisecond, "the impossible", func() bool { return false }) })
	if !failed || !strings.Contains(msg, "the impossible") || !strings.Contains(msg, "never happened") {
		t.Errorf("a condition never true: failed %v, %q", failed, msg)
	}
	failed, msg = run(func(f *fakeT) {
		EventuallyOK(f, 30*time.Millisecond, "the queue to drain", func() error { return errors.New("3 left") })
	})
	if !failed || !strings.Contains(msg, "the queue to drain: 3 left") {
		t.Errorf("a check that never passes: failed %v, %q", failed, msg)
	}
}

func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 800 || b.Len() != 1600 || len(b.Bytes()) != 1600 {
		t.Errorf("%d lines, %d bytes", got, b.Len())
	}
	b.Reset()
	if b.String() != "" {
		t.Error("not empty after Reset")
	}
}

func TestProc(t *testing.T) {
	skipWithoutProc(t)
	m, err := ReadMemory(os.Getpid())
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("memory %+v, %v", m, err)
	}
	if hwm := PeakRSS(t, 0); hwm < m.RSS {
		t.Errorf("own VmHWM %d below the RSS read before it %d", hwm, m.RSS)
	}
	// CPU time grows with work, whatever else the machine does: spin until it has.
	before := CPU(t, 0)
	sched0, err := SchedCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0 := SelfCPU()
	x := 0
	for CPU(t, 0)-before < 50*time.Millisecond {
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	if sched, _ := SchedCPUTime(os.Getpid()); sched <= sched0 {
		t.Errorf("schedstat CPU time did not grow: %v then %v", sched0, sched)
	}
	if self := SelfCPU(); self <= self0 {
		t.Errorf("getrusage CPU time did not grow: %v then %v", self0, self)
	}
	if io, err := ReadIO(0); err == nil && io.SyscR == 0 {
		t.Errorf("no read system calls: %+v", io)
	}
	if _, err := ReadMemory(1 << 30); err == nil {
		t.Error("the memory of a process that does not exist")
	}
	if _, err := CPUTime(1 << 30); err == nil {
		t.Error("the CPU time of a process that does not exist")
	}
}

func TestWantKind(t *testing.T) {
	if failed, msg := run(func(f *fakeT) { WantInvalid(f, errs.Invalidf("bad header: %d", 7), "bad header", "7") }); failed {
		t.Errorf("a matching error failed: %s", msg)
	}
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"nil":      {nil, "no error"},
		"kind":     {errs.New(errs.NotFound, "bad header"), "is errs.NotFound, want errs.Invalid"},
		"message":  {errs.Invalidf("other"), `does not mention "bad header"`},
		"internal": {errors.New("bad header"), "is errs.Internal"},
	} {
		if failed, msg := run(func(f *fakeT) { WantInvalid(f, c.err, "bad header") }); !failed || !strings.Contains(msg, c.want) {
			t.Errorf("%s: failed %v, %q; want %q", name, failed, msg, c.want)
		}
	}
}

func TestFreePortAndRandomHex(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 {
		t.Fatalf("port %d, %v", p, err)
	}
	a, b := RandomHex(8), RandomHex(8)
	if len(a) != 16 || a == b {
		t.Errorf("%q, %q", a, b)
	}
}
