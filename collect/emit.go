package collect

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Job file kinds of --emit.
const (
	EmitSlurm = "slurm"
	EmitK8s   = "k8s"
)

// EmitConfig describes a sharded sweep as a batch job: Shards copies of
// "ftk <Args> --shard i/Shards", i = 0..Shards-1.
type EmitConfig struct {
	Kind   string
	Shards int
	// Args are the ftk arguments of one shard without --shard, starting
	// with "collect".
	Args []string
	// GPUs each shard needs (the largest collective group).
	GPUs int
	// HoursPerShard bounds a shard's run time (Slurm --time).
	HoursPerShard float64
	// Image is the container image with ftk (and PyTorch) for Kubernetes.
	Image string
}

// k8sOut is where the Kubernetes job mounts its output volume.
const k8sOut = "/profiles"

// Emit writes the job file: a Slurm array script or a Kubernetes Indexed
// Job manifest.
func Emit(w io.Writer, c EmitConfig) error {
	if c.Shards < 1 {
		return fmt.Errorf("--shards must be at least 1, got %d", c.Shards)
	}
	switch c.Kind {
	case EmitSlurm:
		return emitSlurm(w, c)
	case EmitK8s:
		return emitK8s(w, c)
	}
	return fmt.Errorf("unknown job kind %q (want %s or %s)", c.Kind, EmitSlurm, EmitK8s)
}

func emitSlurm(w io.Writer, c EmitConfig) error {
	mins := int(c.HoursPerShard*60) + 30 // room for worker start and retries
	cmd := shellJoin(append([]string{"ftk"}, c.Args...)) + fmt.Sprintf(` --shard "${SLURM_ARRAY_TASK_ID}/%d"`, c.Shards)
	_, err := fmt.Fprintf(w, `#!/bin/bash
# ftk collect as a Slurm job array: task i runs shard i of %[1]d and writes its
# own folder (.../shard-<i>-of-%[1]d); "ftk ingest" merges the shards.
#SBATCH --job-name=ftk-collect
#SBATCH --array=0-%[2]d
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-node=%[3]d
#SBATCH --time=%02[4]d:%02[5]d:00
#SBATCH --output=ftk-collect-%%A_%%a.log
set -euo pipefail
%[6]s
`, c.Shards, c.Shards-1, max(c.GPUs, 1), mins/60, mins%60, cmd)
	return err
}

func emitK8s(w io.Writer, c EmitConfig) error {
	args := append([]string(nil), c.Args...)
	for i := 0; i < len(args)-1; i++ { // the shards write to the mounted volume
		if args[i] == "--out" {
			args[i+1] = k8sOut
		}
	}
	if !contains(args, "--out") {
		args = append(args, "--out", k8sOut)
	}
	script := "exec " + shellJoin(append([]string{"ftk"}, args...)) + fmt.Sprintf(` --shard "${JOB_COMPLETION_INDEX}/%d"`, c.Shards)
	image := c.Image
	if image == "" {
		image = "ftk:latest"
	}
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": "ftk-collect"},
		"spec": map[string]any{
			"completionMode": "Indexed",
			"completions":    c.Shards,
			"parallelism":    c.Shards,
			"backoffLimit":   2 * c.Shards,
			"template": map[string]any{
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers": []any{map[string]any{
						"name":         "collect",
						"image":        image,
						"command":      []string{"/bin/sh", "-c", script},
						"resources":    map[string]any{"limits": map[string]any{"nvidia.com/gpu": max(c.GPUs, 1)}},
						"volumeMounts": []any{map[string]any{"name": "profiles", "mountPath": k8sOut}},
					}},
					"volumes": []any{map[string]any{"name": "profiles", "persistentVolumeClaim": map[string]any{"claimName": "ftk-profiles"}}},
				},
			},
		},
	}
	fmt.Fprintf(w, "# ftk collect as a Kubernetes Indexed Job: pod i runs shard i of %d into the\n# ftk-profiles volume (edit image and claimName for your cluster); \"ftk ingest\" merges the shards.\n", c.Shards)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return err
	}
	return enc.Close()
}

// shellJoin quotes args for a POSIX shell.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=+") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
