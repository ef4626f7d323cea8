package batchjob

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The part of Kubernetes' batch/v1 Job that the emitted manifest uses
// (API reference: https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/job-v1/).
type (
	k8sJob struct {
		APIVersion string      `yaml:"apiVersion"`
		Kind       string      `yaml:"kind"`
		Metadata   k8sMetadata `yaml:"metadata"`
		Spec       k8sJobSpec  `yaml:"spec"`
	}
	k8sMetadata struct {
		Name string `yaml:"name"`
	}
	k8sJobSpec struct {
		CompletionMode string         `yaml:"completionMode"`
		Completions    int            `yaml:"completions"`
		Parallelism    int            `yaml:"parallelism"`
		BackoffLimit   int            `yaml:"backoffLimit"`
		Template       k8sPodTemplate `yaml:"template"`
	}
	k8sPodTemplate struct {
		Spec k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy string         `yaml:"restartPolicy"`
		Containers    []k8sContainer `yaml:"containers"`
		Volumes       []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name         string           `yaml:"name"`
		Image        string           `yaml:"image"`
		Command      []string         `yaml:"command"`
		Resources    *k8sResources    `yaml:"resources,omitempty"`
		VolumeMounts []k8sVolumeMount `yaml:"volumeMounts"`
	}
	k8sResources struct {
		Limits map[string]string `yaml:"limits"`
	}
	k8sVolumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name                  string   `yaml:"name"`
		PersistentVolumeClaim k8sClaim `yaml:"persistentVolumeClaim"`
	}
	k8sClaim struct {
		ClaimName string `yaml:"claimName"`
	}
)

// Defaults of the Kubernetes job.
const (
	defaultImage     = "ftk:latest"
	defaultMountPath = "/ftk-out"
	defaultClaim     = "ftk-out"
	volumeName       = "out"
)

func writeK8s(w io.Writer, j Job) error {
	if j.OutFlag == "" {
		return fmt.Errorf("batch job %s: no output flag to point at the mounted volume", j.Name)
	}
	mount := cmp.Or(j.MountPath, defaultMountPath)
	args := slices.Clone(j.Args)
	found := false
	for i := 0; i < len(args)-1; i++ {
		if args[i] == j.OutFlag {
			args[i+1], found = mount, true
		}
	}
	if !found {
		args = append(args, j.OutFlag, mount)
	}
	script := "exec " + ShellJoin(append([]string{j.binary()}, args...)) + fmt.Sprintf(` --shard "${JOB_COMPLETION_INDEX}/%d"`, j.Shards)
	c := k8sContainer{
		Name: j.Name, Image: cmp.Or(j.Image, defaultImage),
		Command:      []string{"/bin/sh", "-c", script},
		VolumeMounts: []k8sVolumeMount{{Name: volumeName, MountPath: mount}},
	}
	if j.GPUs > 0 {
		c.Resources = &k8sResources{Limits: map[string]string{"nvidia.com/gpu": strconv.Itoa(j.GPUs)}}
	}
	job := k8sJob{
		APIVersion: "batch/v1", Kind: "Job", Metadata: k8sMetadata{Name: j.Name},
		Spec: k8sJobSpec{
			CompletionMode: "Indexed", Completions: j.Shards, Parallelism: j.Shards, BackoffLimit: 2 * j.Shards,
			Template: k8sPodTemplate{Spec: k8sPodSpec{
				RestartPolicy: "Never", Containers: []k8sContainer{c},
				Volumes: []k8sVolume{{Name: volumeName, PersistentVolumeClaim: k8sClaim{ClaimName: cmp.Or(j.Claim, defaultClaim)}}},
			}},
		},
	}
	fmt.Fprintf(w, "# %s as a Kubernetes Indexed Job: pod i runs shard i of %d into the volume\n# claimed by %s (edit image and claimName for your cluster).\n", j.Name, j.Shards, cmp.Or(j.Claim, defaultClaim))
	if j.Merge != "" {
		fmt.Fprintf(w, "# When every pod has finished: %s\n", j.Merge)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return fmt.Errorf("batch job %s: %w", j.Name, err)
	}
	return enc.Close()
}
