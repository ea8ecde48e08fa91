//go:build unix

package main

import "syscall"

// ownProcessGroup starts a command of toc work in a process group of its
// own, so that a Ctrl-C meant for toc does not reach it: toc stops
// leasing and lets it finish for --grace.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
