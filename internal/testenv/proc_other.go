//go:build !linux

package testenv

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: servers of a crashed
// test binary keep running until killed by hand.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
