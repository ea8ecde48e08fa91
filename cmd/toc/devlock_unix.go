//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockDataFile takes an exclusive, non-blocking flock on data+".lock" and
// writes this process's pid into it, so that a second toc dev on the same
// data file refuses to start instead of firing every job a second time.
// The OS drops the lock when the process ends, however it ends; a stale
// .lock file left behind holds no lock. unlock releases it.
func lockDataFile(data string) (unlock func(), err error) {
	path := data + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data file %s: %w", data, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "unknown pid"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = "pid " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("data file %s is in use by another toc dev (%s, lock %s): one process per data file", data, holder, path)
		}
		return nil, fmt.Errorf("lock data file %s: %w", data, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock data file %s: write pid: %w", data, err)
	}
	return func() { f.Close() }, nil
}
