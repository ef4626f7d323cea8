package batchjob

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var args = []string{"collect", "all", "--model", "qwen3-30b-a3b", "--device", "h100", "--tp", "8", "--ep", "8", "--out", "/scratch/profiles"}

// The Slurm script runs shard i of n in array task i with the binary it was
// given: run it with a fake ftk that prints its arguments.
func TestSlurmRunsShards(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "my ftk")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, Job{Kind: Slurm, Name: "ftk-collect", Shards: 3, Binary: bin, Args: args, GPUs: 8, Hours: 1.5, Merge: "ftk ingest /scratch/profiles"}); err != nil {
		t.Fatal(err)
	}
	script := b.String()
	for _, want := range []string{"#SBATCH --array=0-2", "#SBATCH --gpus-per-node=8", "#SBATCH --time=02:00:00", "set -euo pipefail", "ftk ingest /scratch/profiles", "'" + bin + "' collect"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to run the emitted script: %v", err)
	}
	job := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(job, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"0", "2"} {
		cmd := exec.Command(bash, job)
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+i)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("task %s: %v: %s", i, err, out)
		}
		if want := strings.Join(args, " ") + " --shard " + i + "/3\n"; string(out) != want {
			t.Errorf("task %s ran %q, want %q", i, out, want)
		}
	}
}

// A job that needs no GPU asks for none: sbatch refuses a GPU request on a
// cluster without GPU resources ("Invalid generic resource").
func TestNoGPURequestWithoutGPUs(t *testing.T) {
	for _, kind := range []string{Slurm, K8s} {
		var b strings.Builder
		if err := Write(&b, Job{Kind: kind, Name: "ftk-collect", Shards: 2, Args: args, OutFlag: "--out"}); err != nil {
			t.Fatal(err)
		}
		if s := b.String(); strings.Contains(s, "gpu") {
			t.Errorf("%s job without GPUs requests one:\n%s", kind, s)
		}
	}
}

func TestRejects(t *testing.T) {
	for _, c := range []struct {
		j    Job
		want string
	}{
		{Job{Kind: "pbs", Name: "x", Shards: 2}, `unknown kind "pbs"`},
		{Job{Kind: Slurm, Name: "x", Shards: 0}, "at least 1"},
		{Job{Kind: Slurm, Name: "x", Shards: 100000}, "--shards 1001 or fewer"},
		{Job{Kind: Slurm, Name: "x", Shards: 1, GPUs: -1}, "negative"},
		{Job{Kind: Slurm, Shards: 1}, "no job name"},
		{Job{Kind: K8s, Name: "x", Shards: 1}, "no output flag"},
	} {
		var b strings.Builder
		if err := Write(&b, c.j); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.j, err, c.want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	if got := ShellJoin([]string{"ftk", "--model", "/a b/c.json", "it's", ""}); got != `ftk --model '/a b/c.json' 'it'\''s' ''` {
		t.Errorf("ShellJoin = %s", got)
	}
}

func TestParseShard(t *testing.T) {
	s, err := ParseShard("2/4")
	if err != nil || s != (Shard{2, 4}) || !s.Owns(6) || s.Owns(5) || s.String() != "2/4" {
		t.Fatalf("%v %v", s, err)
	}
	if !(Shard{}).Whole() || !(Shard{}).Owns(3) {
		t.Error("the zero shard is not the whole list")
	}
	for _, bad := range []string{"", "4/4", "-1/2", "1", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
