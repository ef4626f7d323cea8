package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// availableMemory returns the bytes this process may still take: the
// smaller of the kernel's MemAvailable (/proc/meminfo) and the room left
// under the memory.max of the cgroup mounted at /sys/fs/cgroup (v2: a
// container's own), and false where neither can be read (a system other
// than Linux).
func availableMemory() (uint64, bool) {
	avail, ok := memAvailable()
	if max, err := cgroupFile("memory.max"); err == nil {
		if cur, err := cgroupFile("memory.current"); err == nil && cur < max {
			if !ok || max-cur < avail {
				avail, ok = max-cur, true
			}
		}
	}
	return avail, ok
}

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// cgroupFile reads a number from the process's cgroup v2 folder ("max",
// no limit, is an error).
func cgroupFile(name string) (uint64, error) {
	b, err := os.ReadFile("/sys/fs/cgroup/" + name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

// setSoftMemoryLimit gives the Go runtime a soft memory limit of 90% of
// the memory available at start, unless GOMEMLIMIT sets one: near it the
// collector runs more often instead of letting the heap grow to twice the
// live data (GOGC's default), so a run whose live state fits is not
// killed for its garbage. It cannot save a run whose live state does not
// fit: that still ends in the runtime's fatal out-of-memory error (exit
// 2) or the kernel's SIGKILL (137), which no program catches, so the runs
// ftk can size up front are refused instead (checkInFlightMemory).
func setSoftMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if avail, ok := availableMemory(); ok && avail > 0 {
		debug.SetMemoryLimit(int64(min(avail/10*9, 1<<62)))
	}
}

// inFlightRequestBytes is the simulator's memory for one request in
// flight (waiting or running): 1,000,000 closed-loop clients for as many
// requests, every request in flight at once, peak at 1.50 GB RSS against
// 83 MB for 1,000 clients with fixed:256x32 (llama-3.1-8b on one H100),
// 1.4 KB a request, and at 1.97 GB against 84 MB with fixed:1x1, 1.9 KB.
// The smaller is used, so a run refused for it cannot fit.
const inFlightRequestBytes = 1400

// checkInFlightMemory refuses, before a run starts, closed-loop clients
// whose requests in flight cannot fit in the memory available: each client
// keeps one request in flight, and with more clients than the engines run
// they all wait at once.
//
// requests <= 0 (every row of a trace) counts as many as the clients.
func checkInFlightMemory(clients, requests int) error {
	inFlight := clients
	if requests > 0 {
		inFlight = min(clients, requests)
	}
	avail, ok := availableMemory()
	need := uint64(inFlight) * inFlightRequestBytes
	if !ok || need <= avail {
		return nil
	}
	return fmt.Errorf("simulate: %d clients keep up to %d requests in flight, about %s of simulator state (%d bytes a request), and %s of memory is available: lower --clients",
		clients, inFlight, sizeText(need), inFlightRequestBytes, sizeText(avail))
}
