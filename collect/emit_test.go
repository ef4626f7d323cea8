package collect

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var emitArgs = []string{"collect", "all", "--model", "qwen3-30b-a3b", "--device", "h100", "--tp", "8", "--ep", "8", "--out", "/scratch/profiles"}

// The Slurm script runs shard i of n in array task i: run it with a fake
// ftk that prints its arguments.
func TestEmitSlurm(t *testing.T) {
	var b strings.Builder
	if err := Emit(&b, EmitConfig{Kind: EmitSlurm, Shards: 3, Args: emitArgs, GPUs: 8, HoursPerShard: 1.5}); err != nil {
		t.Fatal(err)
	}
	script := b.String()
	for _, want := range []string{"#SBATCH --array=0-2", "#SBATCH --gpus-per-node=8", "#SBATCH --time=02:00:00", "set -euo pipefail"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to run the emitted script: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ftk"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "job.sh"), []byte(script), 0o755)
	for _, i := range []string{"0", "2"} {
		cmd := exec.Command(bash, filepath.Join(dir, "job.sh"))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID="+i)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("task %s: %v: %s", i, err, out)
		}
		want := strings.Join(emitArgs, " ") + " --shard " + i + "/3\n"
		if string(out) != want {
			t.Errorf("task %s ran %q, want %q", i, out, want)
		}
	}
}

func TestEmitK8s(t *testing.T) {
	var b strings.Builder
	if err := Emit(&b, EmitConfig{Kind: EmitK8s, Shards: 4, Args: emitArgs, GPUs: 8, Image: "registry/ftk:1"}); err != nil {
		t.Fatal(err)
	}
	var job struct {
		Kind string
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					Containers []struct {
						Image     string
						Command   []string
						Resources struct {
							Limits map[string]int
						}
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(b.String()), &job); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	s := job.Spec
	if job.Kind != "Job" || s.CompletionMode != "Indexed" || s.Completions != 4 || s.Parallelism != 4 || len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("job: %+v", job)
	}
	c := s.Template.Spec.Containers[0]
	if c.Image != "registry/ftk:1" || c.Resources.Limits["nvidia.com/gpu"] != 8 {
		t.Errorf("container: %+v", c)
	}
	script := c.Command[len(c.Command)-1]
	if !strings.Contains(script, `--shard "${JOB_COMPLETION_INDEX}/4"`) || !strings.Contains(script, "--out /profiles") || strings.Contains(script, "/scratch") {
		t.Errorf("command %q: want the shard index and the mounted --out", script)
	}
}

func TestEmitRejects(t *testing.T) {
	var b strings.Builder
	if err := Emit(&b, EmitConfig{Kind: "pbs", Shards: 2}); err == nil || !strings.Contains(err.Error(), "pbs") {
		t.Errorf("unknown kind: %v", err)
	}
	if err := Emit(&b, EmitConfig{Kind: EmitSlurm, Shards: 0}); err == nil {
		t.Error("0 shards accepted")
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"ftk", "--model", "/a b/c.json", "it's", ""}); got != `ftk --model '/a b/c.json' 'it'\''s' ''` {
		t.Errorf("shellJoin = %s", got)
	}
}
