package testenv

import "syscall"

// sysProcAttr makes the kernel SIGKILL a server when the thread that started
// it exits (see forkExec), so servers die with a crashed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
