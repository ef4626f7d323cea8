//go:build unix

package collect

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own, so killGroup
// also ends the helper processes a worker spawns (collective ranks).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group cmd leads.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		cmd.Process.Kill()
	}
}
