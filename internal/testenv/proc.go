package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// process is one server binary that can be started, killed and started
// again. Its stdout and stderr are appended to logFile.
type process struct {
	name    string // for messages: "redis-server"
	logFile string

	mu  sync.Mutex
	cur *run // nil when not started or killed
}

// run is one execution of a process.
type run struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's result; read it after done
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// running reports whether the process was started and has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur != nil && !p.cur.exited()
}

// pid returns the running process's id, 0 when it is not running.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil || p.cur.exited() {
		return 0
	}
	return p.cur.cmd.Process.Pid
}

// start runs argv and waits until ready returns nil, the process exits, or
// readyTimeout passes; it does nothing when the process is running already.
// On failure the process is killed and the error ends with the log's tail.
func (p *process) start(argv []string, ready func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && !p.cur.exited() {
		return nil
	}
	p.cur = nil

	f, err := os.OpenFile(p.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	fmt.Fprintf(f, "=== testenv %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	err = forkExec(cmd)
	f.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	r := &run{cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()

	if err := waitReady(r, ready); err != nil {
		r.kill()
		return fmt.Errorf("%s (pid %d) %w\n%s", p.name, cmd.Process.Pid, err, logTail(p.logFile, 25))
	}
	p.cur = r
	return nil
}

// waitReady polls ready until it succeeds, r exits, or readyTimeout passes.
func waitReady(r *run, ready func() error) error {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("exited before it was ready: %v", r.err)
		case <-deadline.C:
			return fmt.Errorf("not ready after %v: %v", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// kill sends SIGKILL to the process and waits until it has been reaped.
// It does nothing when the process is not running.
func (p *process) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.cur
	p.cur = nil
	if r == nil {
		return nil
	}
	if err := r.kill(); err != nil {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	return nil
}

func (r *run) kill() error {
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-r.done:
		return nil
	case <-time.After(killTimeout):
		return fmt.Errorf("pid %d still running %v after SIGKILL", r.cmd.Process.Pid, killTimeout)
	}
}

// forkExec starts cmd from one OS thread that never exits. The parent-death
// signal set by sysProcAttr is tied to the thread that forked the child, not
// to the process, and the Go runtime may end idle threads; a dedicated,
// locked thread makes the signal fire only when the test binary dies.
func forkExec(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forkReqs = make(chan forkReq)
		go forker(forkReqs)
	})
	req := forkReq{cmd: cmd, errc: make(chan error, 1)}
	forkReqs <- req
	return <-req.errc
}

type forkReq struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	forkOnce sync.Once
	forkReqs chan forkReq
)

func forker(reqs <-chan forkReq) {
	runtime.LockOSThread() // never unlocked: the thread lives as long as the process
	for req := range reqs {
		req.errc <- req.cmd.Start()
	}
}
