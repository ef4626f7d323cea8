package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/spec"
)

// helperEnv names the environment variable that turns the test binary into
// a sweep process the kill tests can SIGKILL (the helper process pattern).
const helperEnv = "FTK_COLLECT_TEST_HELPER"

// helperConfig is the sweep a helper process runs.
type helperConfig struct {
	Out      string
	Backend  string
	Families []spec.Family
	DelayMs  int
	Python   string
}

func (h helperConfig) options(t testing.TB) Options {
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 1}}, h.Families...)
	if h.Backend == BackendTorch {
		c.Limits = torchLimits
	}
	o := Options{Plan: c, Out: h.Out, Backend: h.Backend, Warmup: 1, Repeats: 2, shapeDelay: time.Duration(h.DelayMs) * time.Millisecond}
	if h.Backend == BackendTorch {
		o.Torch = TorchOptions{DeviceKind: KindCPU, Python: h.Python, Threads: 1}
	} else {
		o.Device = mustDevice(t, "h800")
	}
	return o
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(helperMain(cfg))
	}
	os.Exit(m.Run())
}

// helperMain runs one sweep and exits: 0 when it finished.
func helperMain(cfg string) int {
	var h helperConfig
	if err := json.Unmarshal([]byte(cfg), &h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tb := &testing.T{}
	if _, err := Run(context.Background(), h.options(tb)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// rowsIn counts the data rows of the CSV files under dir.
func rowsIn(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".csv") {
			data, _ := os.ReadFile(p)
			if c := strings.Count(string(data), "\n"); c > 0 {
				n += c - 1
			}
		}
		return nil
	})
	return n
}

// killMidway starts a sweep in a helper process, SIGKILLs it once at
// least minRows rows are on disk, runs the same sweep again to the end and
// checks that no shape is missing or duplicated.
func killMidway(t *testing.T, h helperConfig, minRows int) {
	cfg, _ := json.Marshal(h)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(cfg))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	o := h.options(t)
	dir := SweepDir(h.Out, map[bool]string{true: deviceCPU, false: "h800"}[h.Backend == BackendTorch], o.Plan.Model.Name, Shard{})
	deadline := time.After(90 * time.Second)
	for rowsIn(dir) < minRows {
		select {
		case err := <-exited:
			t.Fatalf("the sweep ended before it could be killed (%v): %s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no %d rows after 90 s: %s", minRows, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	<-exited
	killed := rowsIn(dir)
	p, err := NewPlan(o.Plan)
	if err != nil {
		t.Fatal(err)
	}
	o.shapeDelay = 0
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped == 0 || sum.Measured == 0 || sum.Skipped+sum.Measured != len(p.Shapes) {
		t.Errorf("resumed run: %+v, plan %d shapes, %d rows before the kill", sum, len(p.Shapes), killed)
	}
	perShape := 2 // CUDA_EVENT and KERNEL_ONLY
	if h.Backend == BackendTorch {
		perShape = 1 // CPU
	}
	checkComplete(t, dir, p, perShape)
	meta, err := readMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	for f, fm := range meta.Families {
		if fm.Status != "complete" {
			t.Errorf("family %s: %s after the resumed run", f, fm.Status)
		}
	}
}

func TestKillAndResumeSynthetic(t *testing.T) {
	killMidway(t, helperConfig{Out: t.TempDir(), Backend: BackendSynthetic, DelayMs: 3,
		Families: []spec.Family{spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE}}, 40)
}
