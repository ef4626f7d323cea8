package collect

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Without a driver (or without cgo) OpenNVML fails with ErrNoDriver and
// says why, without any further NVML call (which would abort the process).
// With a driver it lists GPUs that can be sampled.
func TestOpenNVML(t *testing.T) {
	nv, err := OpenNVML()
	if err != nil {
		if !errors.Is(err, ErrNoDriver) {
			t.Fatalf("OpenNVML: %v, want ErrNoDriver", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "libnvidia-ml.so.1") && !strings.Contains(msg, "no NVML in this build") && !strings.Contains(msg, "NVML init") {
			t.Errorf("OpenNVML error %q does not say why", msg)
		}
		return
	}
	defer nv.Close()
	for _, g := range nv.GPUs {
		if g.Name == "" || g.MemoryBytes == 0 {
			t.Errorf("GPU %d: %+v", g.Index, g)
		}
		if _, err := nv.Sample(g.Index); err != nil {
			t.Errorf("sampling GPU %d: %v", g.Index, err)
		}
	}
}

// On a machine without a driver, auto falls back to the synthetic backend
// and says so; --backend torch on cuda is refused with a way out.
func TestBackendChoiceWithoutDriver(t *testing.T) {
	if nv, err := OpenNVML(); err == nil {
		nv.Close()
		t.Log("an NVIDIA driver is present: the no-driver messages cannot be checked here")
		return
	}
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear)
	var log strings.Builder
	o := Options{Plan: c, Device: mustDevice(t, "h100"), Out: t.TempDir(), Backend: BackendAuto, Repeats: 2, Log: &log}
	sum, err := Run(context.Background(), o)
	if err != nil || sum.Backend != BackendSynthetic {
		t.Fatalf("auto: %+v, %v", sum, err)
	}
	if !strings.Contains(log.String(), "no NVIDIA driver found") || !strings.Contains(log.String(), "using the synthetic backend") {
		t.Errorf("auto said %q", log.String())
	}
	o.Backend, o.Torch.DeviceKind = BackendTorch, KindCUDA
	_, err = Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "no NVIDIA driver found") || !strings.Contains(err.Error(), "--device-kind cpu") {
		t.Errorf("torch on cuda without a driver: %v", err)
	}
}

func TestCheckDevice(t *testing.T) {
	h100 := mustDevice(t, "h100")
	for _, tc := range []struct {
		gpu   GPUInfo
		force bool
		want  string // "" for accepted
	}{
		{GPUInfo{Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 80 << 30}, false, ""},
		{GPUInfo{Name: "NVIDIA H200", MemoryBytes: 141 << 30}, false, "not h100"},
		{GPUInfo{Name: "NVIDIA H200", MemoryBytes: 141 << 30}, true, ""},
		// The PCIe H100 and the L40S are catalog devices of their own.
		{GPUInfo{Name: "NVIDIA H100 PCIe", MemoryBytes: 80 << 30}, false, "not h100: pass --device h100-pcie"},
		{GPUInfo{Name: "NVIDIA L40S", MemoryBytes: 48 << 30}, false, "not h100: pass --device l40s"},
		// An unknown name is judged by its memory.
		{GPUInfo{Name: "NVIDIA RTX 6000 Ada Generation", MemoryBytes: 48 << 30}, false, "does not look like h100"},
		{GPUInfo{Name: "NVIDIA H100 NVL", MemoryBytes: 80 << 30}, false, ""},
	} {
		err := CheckDevice(h100, tc.gpu, tc.force)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v force=%v: %v, want %q", tc.gpu, tc.force, err, tc.want)
		}
	}
}

func TestReasonString(t *testing.T) {
	r := uint64(reasonSwPowerCap | reasonHwThermalSlowdown | 0x10000)
	if got := ReasonString(r); got != "sw_power_cap|hw_thermal_slowdown|0x10000" {
		t.Errorf("ReasonString = %q", got)
	}
	if !Throttled(reasonSwThermalSlowdown) || Throttled(reasonGpuIdle|reasonAppClocksSetting) {
		t.Error("Throttled: thermal slowdown must count, idle and application clocks must not")
	}
}
