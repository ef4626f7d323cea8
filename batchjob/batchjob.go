// Package batchjob writes the cluster jobs that run a sharded ftk command: a
// Slurm job array or a Kubernetes Indexed Job in which task i runs
// "BINARY ARGS --shard i/n". collect and search emit their sweeps through it;
// a merge step (ftk ingest, or ftk search without --shard) combines the
// shards' outputs afterwards.
package batchjob

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Job kinds.
const (
	Slurm = "slurm"
	K8s   = "k8s"
)

// Job is one sharded command as a batch job.
type Job struct {
	// Kind is Slurm or K8s.
	Kind string
	// Name names the job (Slurm --job-name, the Kubernetes Job and its
	// container), for example "ftk-collect".
	Name string
	// Shards is the number of tasks; task i appends --shard i/Shards.
	Shards int
	// Binary is the path of the ftk executable on the nodes that run the
	// tasks. Empty means "ftk" from the task's PATH.
	Binary string
	// Args are the arguments after the binary, without --shard.
	Args []string
	// GPUs each task needs; 0 requests none (a cluster without GPU
	// resources refuses a job that asks for them).
	GPUs int
	// Hours bounds a task's run time (Slurm --time; 30 minutes are added
	// for start-up and retries).
	Hours float64
	// Image is the container image with ftk for Kubernetes.
	Image string
	// OutFlag is the flag of Args naming the output folder ("--out",
	// "-o"); Kubernetes points it at the mounted volume MountPath, and
	// adds it when Args lacks it.
	OutFlag string
	// MountPath is where the Kubernetes job mounts its output volume.
	MountPath string
	// Claim is the PersistentVolumeClaim mounted at MountPath.
	Claim string
	// Merge says, in the job file's header, what combines the shards.
	Merge string
}

// SlurmMaxArrayTasks is the most tasks of a job array under Slurm's
// default MaxArraySize of 1001 (slurm.conf(5): array indices 0 to
// MaxArraySize-1).
const SlurmMaxArrayTasks = 1001

// ErrTooManyShards is Write's error for more shards than the scheduler's
// job array holds.
var ErrTooManyShards = errors.New("batch job: too many shards")

// Write writes the job file: a Slurm array script or a Kubernetes Indexed
// Job manifest.
func Write(w io.Writer, j Job) error {
	switch {
	case j.Shards < 1:
		return fmt.Errorf("batch job: --shards must be at least 1, got %d", j.Shards)
	case j.GPUs < 0:
		return fmt.Errorf("batch job: GPUs per task must not be negative, got %d", j.GPUs)
	case j.Name == "":
		return fmt.Errorf("batch job: no job name")
	}
	switch j.Kind {
	case Slurm:
		if j.Shards > SlurmMaxArrayTasks {
			return fmt.Errorf("%w: --shards %d is more tasks than a Slurm job array holds by default (MaxArraySize %d: indices 0-%d): give --shards %d or fewer (each task then takes more of the work), or raise MaxArraySize in slurm.conf",
				ErrTooManyShards, j.Shards, SlurmMaxArrayTasks, SlurmMaxArrayTasks-1, SlurmMaxArrayTasks)
		}
		return writeSlurm(w, j)
	case K8s:
		return writeK8s(w, j)
	}
	return fmt.Errorf("batch job: unknown kind %q (want %s or %s)", j.Kind, Slurm, K8s)
}

// binary is the executable a task runs.
func (j *Job) binary() string {
	if j.Binary == "" {
		return "ftk"
	}
	return j.Binary
}

func writeSlurm(w io.Writer, j Job) error {
	mins := int(j.Hours*60) + 30
	cmd := ShellJoin(append([]string{j.binary()}, j.Args...)) + fmt.Sprintf(` --shard "${SLURM_ARRAY_TASK_ID}/%d"`, j.Shards)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# %s as a Slurm job array: task i runs shard i of %d.\n", j.Name, j.Shards)
	if j.Merge != "" {
		fmt.Fprintf(&b, "# When every task has finished: %s\n", j.Merge)
	}
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n#SBATCH --array=0-%d\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n", j.Name, j.Shards-1)
	if j.GPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --gpus-per-node=%d\n", j.GPUs)
	}
	fmt.Fprintf(&b, "#SBATCH --time=%02d:%02d:00\n#SBATCH --output=%s-%%A_%%a.log\nset -euo pipefail\n%s\n", mins/60, mins%60, j.Name, cmd)
	_, err := io.WriteString(w, b.String())
	return err
}

// ShellJoin quotes args for a POSIX shell.
func ShellJoin(args []string) string {
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
