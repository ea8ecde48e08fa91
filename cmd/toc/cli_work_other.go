//go:build !unix

package main

import "syscall"

// ownProcessGroup is nil where there are no process groups.
func ownProcessGroup() *syscall.SysProcAttr { return nil }
