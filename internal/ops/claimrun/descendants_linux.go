package claimrun

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (Linux 3.4).
const prSetChildSubreaper = 36

// becomeSubreaper makes idmpctl the reaper of the command's orphans (a
// setsid left by a shell, a daemon's double fork), so that while it lives
// it finds everything the command started, also outside its group.
func becomeSubreaper() {
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0)
}

// proc is one line of /proc/PID/stat, as much as descendants needs.
type proc struct {
	pid, ppid, pgrp int
	zombie, stopped bool
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, zombie: f[0][0] == 'Z' || f[0][0] == 'X',
		stopped: f[0][0] == 'T' || f[0][0] == 't'}, true
}

// descendants lists the live descendants of idmpctl but the guard (pid
// pgid): those outside the group pgid, and with inGroup those in it too. A
// subreaper's orphans are its children, so the walk finds them all.
func descendants(pgid int, inGroup bool) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []proc
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c.pid == pgid {
				continue // the guard
			}
			queue = append(queue, c.pid)
			if !c.zombie && (inGroup || c.pgrp != pgid) {
				out = append(out, c)
			}
		}
	}
	return out
}

// signalEscaped sends sig to each escaped descendant, checking just before
// that it still is one (a pid read from /proc may have been reused since).
func signalEscaped(pgid int, sig syscall.Signal) {
	for _, p := range descendants(pgid, false) {
		if now, ok := readProc(p.pid); ok && now.ppid == p.ppid && !now.zombie {
			_ = syscall.Kill(p.pid, sig)
		}
	}
}
