package batchjob

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The subset of Kubernetes' batch/v1 Job schema that ftk's manifests may
// use, written from the API reference (workload-resources/job-v1,
// pod-v1, container, volume; Kubernetes 1.30), independently of the types
// the manifest is written with. Decoding is strict: a field the schema
// lacks (a typo, a field of another kind) fails the test. Quantities are
// int-or-string.
type (
	schemaJob struct {
		APIVersion string         `yaml:"apiVersion"`
		Kind       string         `yaml:"kind"`
		Metadata   schemaMeta     `yaml:"metadata"`
		Spec       schemaJobSpec  `yaml:"spec"`
		Status     map[string]any `yaml:"status"`
	}
	schemaMeta struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	schemaJobSpec struct {
		CompletionMode          *string           `yaml:"completionMode"`
		Completions             *int              `yaml:"completions"`
		Parallelism             *int              `yaml:"parallelism"`
		BackoffLimit            *int              `yaml:"backoffLimit"`
		BackoffLimitPerIndex    *int              `yaml:"backoffLimitPerIndex"`
		ActiveDeadlineSeconds   *int              `yaml:"activeDeadlineSeconds"`
		TTLSecondsAfterFinished *int              `yaml:"ttlSecondsAfterFinished"`
		Suspend                 *bool             `yaml:"suspend"`
		Template                schemaPodTemplate `yaml:"template"`
	}
	schemaPodTemplate struct {
		Metadata schemaMeta    `yaml:"metadata"`
		Spec     schemaPodSpec `yaml:"spec"`
	}
	schemaPodSpec struct {
		RestartPolicy      string            `yaml:"restartPolicy"`
		Containers         []schemaContainer `yaml:"containers"`
		Volumes            []schemaVolume    `yaml:"volumes"`
		NodeSelector       map[string]string `yaml:"nodeSelector"`
		ServiceAccountName string            `yaml:"serviceAccountName"`
	}
	schemaContainer struct {
		Name         string              `yaml:"name"`
		Image        string              `yaml:"image"`
		Command      []string            `yaml:"command"`
		Args         []string            `yaml:"args"`
		WorkingDir   string              `yaml:"workingDir"`
		Env          []schemaEnv         `yaml:"env"`
		Resources    schemaResources     `yaml:"resources"`
		VolumeMounts []schemaVolumeMount `yaml:"volumeMounts"`
	}
	schemaEnv struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	}
	schemaResources struct {
		Limits   map[string]yaml.Node `yaml:"limits"`
		Requests map[string]yaml.Node `yaml:"requests"`
	}
	schemaVolumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
		SubPath   string `yaml:"subPath"`
	}
	schemaVolume struct {
		Name                  string          `yaml:"name"`
		PersistentVolumeClaim *schemaClaimRef `yaml:"persistentVolumeClaim"`
		EmptyDir              map[string]any  `yaml:"emptyDir"`
		HostPath              map[string]any  `yaml:"hostPath"`
	}
	schemaClaimRef struct {
		ClaimName string `yaml:"claimName"`
		ReadOnly  bool   `yaml:"readOnly"`
	}
)

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	quantity     = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i?|[munkMGTPE])?$`)
)

// validateJob decodes a manifest strictly into the schema subset and
// checks the rules the API server enforces on those fields.
func validateJob(manifest []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	dec.KnownFields(true)
	var j schemaJob
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("not a batch/v1 Job: %w", err)
	}
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		bad("apiVersion/kind %s/%s, want batch/v1 Job", j.APIVersion, j.Kind)
	}
	if !dnsSubdomain.MatchString(j.Metadata.Name) {
		bad("metadata.name %q is not a DNS-1123 subdomain", j.Metadata.Name)
	}
	s := j.Spec
	mode := "NonIndexed"
	if s.CompletionMode != nil {
		mode = *s.CompletionMode
	}
	switch mode {
	case "NonIndexed":
	case "Indexed":
		if s.Completions == nil || *s.Completions < 1 || *s.Completions > 100000 {
			bad("spec.completions must be set in 1..100000 for completionMode Indexed")
		}
	default:
		bad("spec.completionMode %q: want NonIndexed or Indexed", mode)
	}
	for name, v := range map[string]*int{"parallelism": s.Parallelism, "completions": s.Completions, "backoffLimit": s.BackoffLimit} {
		if v != nil && *v < 0 {
			bad("spec.%s must not be negative, got %d", name, *v)
		}
	}
	p := s.Template.Spec
	if p.RestartPolicy != "Never" && p.RestartPolicy != "OnFailure" {
		bad("spec.template.spec.restartPolicy %q: a Job needs Never or OnFailure", p.RestartPolicy)
	}
	vols := map[string]bool{}
	for i, v := range p.Volumes {
		if !dnsLabel.MatchString(v.Name) {
			bad("volumes[%d].name %q is not a DNS-1123 label", i, v.Name)
		}
		n := 0
		if v.PersistentVolumeClaim != nil {
			n++
			if v.PersistentVolumeClaim.ClaimName == "" {
				bad("volumes[%d].persistentVolumeClaim.claimName is empty", i)
			}
		}
		if v.EmptyDir != nil {
			n++
		}
		if v.HostPath != nil {
			n++
		}
		if n != 1 {
			bad("volumes[%d] has %d sources, want exactly one", i, n)
		}
		vols[v.Name] = true
	}
	if len(p.Containers) == 0 {
		bad("spec.template.spec.containers is empty")
	}
	for i, c := range p.Containers {
		if !dnsLabel.MatchString(c.Name) {
			bad("containers[%d].name %q is not a DNS-1123 label", i, c.Name)
		}
		if c.Image == "" {
			bad("containers[%d].image is empty", i)
		}
		for _, m := range []map[string]yaml.Node{c.Resources.Limits, c.Resources.Requests} {
			for k, q := range m {
				if q.Kind != yaml.ScalarNode || !quantity.MatchString(q.Value) {
					bad("containers[%d].resources %s: %q is not a quantity", i, k, q.Value)
				}
			}
		}
		for k, m := range c.VolumeMounts {
			if !vols[m.Name] {
				bad("containers[%d].volumeMounts[%d] names no volume (%q)", i, k, m.Name)
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				bad("containers[%d].volumeMounts[%d].mountPath %q is not absolute", i, k, m.MountPath)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func TestK8sManifestIsAValidJob(t *testing.T) {
	for _, gpus := range []int{0, 8} {
		var b strings.Builder
		if err := Write(&b, Job{Kind: K8s, Name: "ftk-collect", Shards: 4, Args: args, GPUs: gpus, Image: "registry/ftk:1", OutFlag: "--out", Merge: "ftk ingest /ftk-out"}); err != nil {
			t.Fatal(err)
		}
		if err := validateJob([]byte(b.String())); err != nil {
			t.Fatalf("GPUs %d: %v\n%s", gpus, err, b.String())
		}
		var j schemaJob
		if err := yaml.Unmarshal([]byte(b.String()), &j); err != nil {
			t.Fatal(err)
		}
		c := j.Spec.Template.Spec.Containers[0]
		if *j.Spec.Completions != 4 || *j.Spec.Parallelism != 4 || c.Image != "registry/ftk:1" {
			t.Errorf("job %+v", j.Spec)
		}
		if g, ok := c.Resources.Limits["nvidia.com/gpu"]; (gpus > 0) != ok || (ok && g.Value != "8") {
			t.Errorf("GPUs %d: limits %v", gpus, c.Resources.Limits)
		}
		script := c.Command[len(c.Command)-1]
		if !strings.Contains(script, `--shard "${JOB_COMPLETION_INDEX}/4"`) || !strings.Contains(script, "--out /ftk-out") || strings.Contains(script, "/scratch") {
			t.Errorf("command %q: want the shard index and the mounted --out", script)
		}
	}
}

// The validator catches what it claims to: each broken manifest fails.
func TestK8sSchemaRejects(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, Job{Kind: K8s, Name: "ftk-search", Shards: 2, Args: []string{"search"}, OutFlag: "-o"}); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	for _, c := range []struct{ from, to, want string }{
		{"completionMode: Indexed", "completionsMode: Indexed", "not found"},
		{"completionMode: Indexed", "completionMode: Index", "completionMode"},
		{"restartPolicy: Never", "restartPolicy: Always", "restartPolicy"},
		{"name: ftk-search\n", "name: FTK_search\n", "DNS-1123"},
		{"claimName: ftk-out", "claimName: ''", "claimName"},
		{"mountPath: /ftk-out", "mountPath: ftk-out", "absolute"},
		{"kind: Job", "kind: CronJob", "want batch/v1 Job"},
	} {
		broken := strings.Replace(good, c.from, c.to, 1)
		if broken == good {
			t.Fatalf("%q not in the manifest:\n%s", c.from, good)
		}
		if err := validateJob([]byte(broken)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q -> %q: error %v, want %q", c.from, c.to, err, c.want)
		}
	}
}
