package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmCluster is a single-node Slurm cluster started by a test: munged,
// slurmctld and slurmd as root, with their state, sockets and logs in a
// temporary folder and free ports, so that it does not touch a Slurm the
// machine may run.
type slurmCluster struct {
	dir  string
	env  []string // SLURM_CONF for the client commands
	pids []string // pid files of the daemons
}

// startSlurm starts the cluster or skips the test, saying why, when the
// daemons cannot run here (.ci/deps installs Debian's slurm-wlm and munge
// as root; CI runs as root).
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	var missing []string
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat("/usr/sbin/" + b); err != nil {
				missing = append(missing, b)
			}
		}
	}
	switch {
	case os.Geteuid() != 0:
		t.Skip("SKIPPED: the Slurm integration test starts slurmctld, slurmd and munged, which needs root; run make test as root (as CI does)")
	case len(missing) > 0:
		t.Skipf("SKIPPED: the Slurm integration test needs %s: run .ci/deps as root (installs Debian's slurm-wlm and munge)", strings.Join(missing, ", "))
	}
	// Short paths: the munge socket path must fit a sockaddr_un.
	dir, err := os.MkdirTemp("", "ftk-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{dir: dir}
	t.Cleanup(func() { c.stop(t) })
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	for i := range key {
		key[i] = byte(i*7 + 13)
	}
	if err := os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	sock := filepath.Join(dir, "munge", "sock")
	conf := fmt.Sprintf(`ClusterName=ftktest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
AuthType=auth/munge
AuthInfo=socket=%[5]s
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[2]s/state
SlurmdSpoolDir=%[2]s/spool
SlurmctldPidFile=%[2]s/slurmctld.pid
SlurmdPidFile=%[2]s/slurmd.pid
SlurmctldLogFile=%[2]s/slurmctld.log
SlurmdLogFile=%[2]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
InactiveLimit=0
MinJobAge=300
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, dir, freePort(t), freePort(t), sock, numCPU())
	confPath := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "SLURM_CONF="+confPath)
	daemon := func(name string, args ...string) {
		t.Helper()
		path, err := exec.LookPath(name)
		if err != nil {
			path = "/usr/sbin/" + name
		}
		cmd := exec.Command(path, args...)
		cmd.Env = c.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s%s", name, err, out, c.logs())
		}
	}
	c.pids = []string{filepath.Join(dir, "munge", "pid"), filepath.Join(dir, "slurmctld.pid"), filepath.Join(dir, "slurmd.pid")}
	daemon("munged", "--force", "-S", sock, "--key-file="+filepath.Join(dir, "munge", "munge.key"), "--pid-file="+c.pids[0],
		"--log-file="+filepath.Join(dir, "munged.log"), "--seed-file="+filepath.Join(dir, "munge", "seed"))
	daemon("slurmctld", "-f", confPath, "-i")
	daemon("slurmd", "-f", confPath)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command("sinfo", "-h", "-o", "%T")
		cmd.Env = c.env
		out, _ := cmd.Output()
		if strings.TrimSpace(string(out)) == "idle" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Slurm node is not idle after 60 s (sinfo: %q)%s", out, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func numCPU() int {
	n := 0
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n = strings.Count(string(data), "\nprocessor")
		if strings.HasPrefix(string(data), "processor") {
			n++
		}
	}
	return max(n, 1)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logs returns the daemons' logs for a failure message.
func (c *slurmCluster) logs() string {
	var b strings.Builder
	for _, f := range []string{"munged.log", "slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.dir, f))
		fmt.Fprintf(&b, "\n--- %s\n%s", f, data)
	}
	return b.String()
}

// stop ends the daemons it started, by their pid files, and removes the
// folder.
func (c *slurmCluster) stop(t *testing.T) {
	for i := len(c.pids) - 1; i >= 0; i-- {
		data, err := os.ReadFile(c.pids[i])
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(string(data), &pid); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
			for j := 0; j < 50 && syscall.Kill(pid, 0) == nil; j++ {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	os.RemoveAll(c.dir)
}

// submit runs a job file with sbatch in dir, the test binary acting as
// ftk, waits for every task (polling squeue, faster than sbatch --wait) and
// fails the test unless every task completed with exit code 0.
func (c *slurmCluster) submit(t *testing.T, dir, script string) {
	t.Helper()
	path := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	slurm := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(c.env, runAsFTK+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s%s", name, strings.Join(args, " "), err, out, c.logs())
		}
		return strings.TrimSpace(string(out))
	}
	t0 := time.Now()
	id := slurm("sbatch", "--parsable", path)
	defer func() { t.Logf("job %s: %s", id, time.Since(t0)) }()
	deadline := time.Now().Add(3 * time.Minute)
	for slurm("squeue", "-h", "-j", id) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("job %s still queued or running after 3 minutes:\n%s%s", id, slurm("squeue", "-j", id), c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	jobs := strings.Split(slurm("scontrol", "-o", "show", "job", id), "\n")
	for _, j := range jobs {
		if !strings.Contains(j, "JobState=COMPLETED") || !strings.Contains(j, "ExitCode=0:0") {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			var b strings.Builder
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				fmt.Fprintf(&b, "\n--- %s\n%s", l, data)
			}
			t.Fatalf("a task of job %s failed: %s\n%s%s", id, j, b.String(), c.logs())
		}
	}
	if len(jobs) < 2 {
		t.Fatalf("job %s: %d tasks, want an array:\n%s", id, len(jobs), strings.Join(jobs, "\n"))
	}
}

var samples = regexp.MustCompile(`(\d+) samples in \d+ Arrow files; excluded (\d+) whole rows and (\d+) operator cells; dropped (\d+) exact duplicate rows and (\d+) identical files; (\d+) shapes measured more than once \(kept, (\d+) with`)

// The job arrays that collect --emit slurm and search --emit slurm write
// run to completion on a real (single-node) Slurm, and their shards merge
// to what one unsharded run gives.
func TestSlurmArrays(t *testing.T) {
	t0 := time.Now()
	c := startSlurm(t)
	t.Logf("cluster up in %s", time.Since(t0))
	work := t.TempDir()
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("ftk %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}

	// collect: four shards against one sweep, compared after ingest.
	sweep := []string{"collect", "all", "--backend", "synthetic", "--model", "qwen3-30b-a3b-tiny", "--device", "h100", "--tp", "2", "--ep", "2",
		"--max-num-batched-tokens", "512", "--max-num-seqs", "16", "--max-model-len", "1024", "--repeats", "3"}
	script := must(append(sweep, "-o", filepath.Join(work, "sharded"), "--emit", "slurm", "--shards", "4")...)
	if strings.Contains(script, "gpu") {
		t.Fatalf("a synthetic sweep's job requests GPUs:\n%s", script)
	}
	c.submit(t, work, script)
	must(append(sweep, "-o", filepath.Join(work, "whole"))...)
	ingest := func(in string) []string {
		t.Helper()
		_, errOut, code := ftk(t, "ingest", filepath.Join(work, in), "-o", filepath.Join(work, "ds-"+in))
		if code != 0 {
			t.Fatalf("ingest %s: exit %d: %s", in, code, errOut)
		}
		return samples.FindStringSubmatch(errOut)
	}
	a, b := ingest("sharded"), ingest("whole")
	if a == nil || b == nil || a[0] != b[0] {
		t.Errorf("ingest of the shards: %v, of one sweep: %v", a, b)
	}

	// search: three shards into one folder, then the merge.
	searchDir := filepath.Join(work, "search")
	script = must(searchArgs(searchDir, "--emit", "slurm", "--shards", "3")...)
	c.submit(t, work, script)
	for i := range 3 {
		if logs, _ := filepath.Glob(filepath.Join(work, fmt.Sprintf("ftk-search-*_%d.log", i))); len(logs) != 1 {
			t.Errorf("no log of search task %d: %v", i, logs)
		}
	}
	_, errOut, code := ftk(t, searchArgs(searchDir)...)
	if code != 0 || !regexp.MustCompile(`search: (\d+) candidates \(\d+ already searched`).MatchString(errOut) {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	if m := regexp.MustCompile(`search: (\d+) candidates \((\d+) already`).FindStringSubmatch(errOut); m[1] != m[2] {
		t.Errorf("the merge searched candidates the shards left: %s", errOut)
	}
	must(searchArgs(filepath.Join(work, "search-whole"))...)
	for _, f := range []string{"results.csv", "pareto.png"} {
		x, _ := os.ReadFile(filepath.Join(searchDir, f))
		y, _ := os.ReadFile(filepath.Join(work, "search-whole", f))
		if len(x) == 0 || string(x) != string(y) {
			t.Errorf("%s of the merged shards differs from one search's", f)
		}
	}
}
