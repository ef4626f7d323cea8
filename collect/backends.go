package collect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// deviceCPU labels sweeps of the torch worker on the host CPU.
const deviceCPU = "cpu"

// resolveBackend settles the backend (auto picks torch when NVML finds a
// GPU and a Python with torch exists, else synthetic, and says why), the
// device label, the measurement types and the precision.
func (s *sweep) resolveBackend(ctx context.Context) error {
	o := &s.o
	switch o.Backend {
	case "", BackendAuto:
		s.autoBackend(ctx)
	case BackendSynthetic:
	case BackendTorch:
		if o.Torch.DeviceKind == "" {
			o.Torch.DeviceKind = KindCUDA
		}
		switch o.Torch.DeviceKind {
		case KindCUDA:
			nv, err := OpenNVML()
			if err != nil {
				return fmt.Errorf("--backend torch on cuda: %w: pass --device-kind cpu to run the worker on the CPU, or --backend synthetic", err)
			}
			s.nvml = nv
			if len(nv.GPUs) == 0 {
				return fmt.Errorf("--backend torch on cuda: NVML (driver %s) reports no GPU", nv.Driver)
			}
		case KindCPU:
		default:
			return fmt.Errorf("unknown device kind %q (want %s or %s)", o.Torch.DeviceKind, KindCUDA, KindCPU)
		}
		py, _, err := FindPython(ctx, o.Torch.Python)
		if err != nil {
			return fmt.Errorf("--backend torch: %w", err)
		}
		o.Torch.Python = py
	default:
		return fmt.Errorf("unknown backend %q (want %s, %s or %s)", o.Backend, BackendAuto, BackendSynthetic, BackendTorch)
	}
	prec := "BF16"
	if o.Plan.Model.WeightBytes == 1 {
		prec = "FP8"
	}
	allowed := []string{spec.CUDAEvent, spec.KernelOnly}
	switch {
	case o.Backend == BackendSynthetic:
		if o.Device == nil {
			return fmt.Errorf("the synthetic backend needs a device to model: pass --device (%s)", strings.Join(spec.DeviceNames(), ", "))
		}
		s.label = o.Device.Name
	case o.Torch.DeviceKind == KindCPU:
		if o.Device != nil && o.Device.Name != deviceCPU {
			return fmt.Errorf("a torch run on the CPU measures the CPU, not %s: drop --device", o.Device.Name)
		}
		s.label, prec, allowed = deviceCPU, "FP32", []string{spec.CPUTime}
	default:
		if err := s.checkGPUs(); err != nil {
			return err
		}
		s.label = o.Device.Name
	}
	if len(o.Measurements) == 0 {
		o.Measurements = allowed
	}
	for _, m := range o.Measurements {
		if !slices.Contains(allowed, m) {
			return fmt.Errorf("measurement type %s is not available with this backend (want %s)", m, strings.Join(allowed, ", "))
		}
	}
	s.rows = rowMaker{model: o.Plan.Model, limits: o.Plan.Limits, device: s.label, backend: o.Backend, precision: prec}
	return nil
}

func (s *sweep) autoBackend(ctx context.Context) {
	o := &s.o
	o.Backend = BackendSynthetic
	nv, err := OpenNVML()
	if err != nil {
		fmt.Fprintf(o.Log, "collect: %v: using the synthetic backend\n", err)
		return
	}
	if len(nv.GPUs) == 0 {
		nv.Close()
		fmt.Fprintf(o.Log, "collect: NVML (driver %s) reports no GPU: using the synthetic backend\n", nv.Driver)
		return
	}
	py, _, err := FindPython(ctx, o.Torch.Python)
	if err != nil {
		nv.Close()
		fmt.Fprintf(o.Log, "collect: found %d NVIDIA GPU(s) but %v: using the synthetic backend\n", len(nv.GPUs), err)
		return
	}
	o.Backend, o.Torch.DeviceKind, o.Torch.Python, s.nvml = BackendTorch, KindCUDA, py, nv
	fmt.Fprintf(o.Log, "collect: found %d NVIDIA GPU(s) and %s: using the torch backend\n", len(nv.GPUs), py)
}

// checkGPUs picks the GPUs of a CUDA run, labels the sweep from the first
// one when --device was not given, refuses a GPU that is not the labelled
// device, and locks clocks when asked.
func (s *sweep) checkGPUs() error {
	o, nv := &s.o, s.nvml
	s.gpus = o.Torch.GPUs
	if len(s.gpus) == 0 {
		for _, g := range nv.GPUs {
			s.gpus = append(s.gpus, g.Index)
		}
	}
	for _, g := range s.gpus {
		if g < 0 || g >= len(nv.GPUs) {
			return fmt.Errorf("--gpus: no GPU %d (NVML sees %d)", g, len(nv.GPUs))
		}
	}
	if o.Device == nil {
		d, err := spec.LookupDevice(nv.GPUs[s.gpus[0]].Name)
		if err != nil {
			return fmt.Errorf("GPU %d (%s) is not in the device catalog: pass --device to label the sweep", s.gpus[0], nv.GPUs[s.gpus[0]].Name)
		}
		o.Device = d
	}
	for _, g := range s.gpus {
		if err := CheckDevice(o.Device, nv.GPUs[g], o.Torch.ForceDevice); err != nil {
			return err
		}
	}
	if o.Torch.LockClocks {
		for _, g := range s.gpus {
			if err := nv.LockClocks(g); err != nil {
				fmt.Fprintf(o.Log, "collect: --lock-clocks: %v: measuring with unlocked clocks\n", err)
			}
		}
	}
	return nil
}

func (s *sweep) closeNVML() {
	if s.nvml != nil {
		s.nvml.Close()
		s.nvml = nil
	}
}

// openBackends starts the backends, one per worker, and records the
// environment they report.
func (s *sweep) openBackends(ctx context.Context) ([]Backend, error) {
	o := &s.o
	if o.newBackend != nil {
		b, err := o.newBackend(0)
		if err != nil {
			return nil, err
		}
		return []Backend{b}, nil
	}
	if o.Backend == BackendSynthetic {
		return []Backend{NewSynthetic(o.Device, o.Plan.Seed)}, nil
	}
	devices := []string{deviceCPU}
	var env []string
	if o.Torch.DeviceKind == KindCUDA {
		devices = devices[:0]
		vis := make([]string, len(s.gpus))
		for i, g := range s.gpus {
			vis[i] = strconv.Itoa(g)
			devices = append(devices, fmt.Sprintf("cuda:%d", i))
		}
		env = []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + strings.Join(vis, ",")}
	}
	var out []Backend
	for i, d := range devices {
		b, err := newTorchBackend(o.Torch.Python, d, o.Torch.Threads, env, o.Log, fmt.Sprintf("worker %d", i))
		if err == nil {
			b.kernels = o.Torch.Kernels
			err = b.start(ctx)
		}
		if err != nil {
			for _, x := range out {
				x.Close()
			}
			return nil, err
		}
		out = append(out, b)
	}
	s.meta.Environment = s.torchEnvironment(out[0].(*torchBackend).hello)
	return out, writeMeta(s.dir, s.meta)
}

// environment is the provenance recorded before any worker starts.
func (s *sweep) environment() map[string]string {
	if s.o.Backend == BackendSynthetic {
		return map[string]string{"device_model": "roofline.Roofline (docs/design.md section 6), seeded log-normal noise"}
	}
	return nil
}

// torchEnvironment records where real measurements came from.
func (s *sweep) torchEnvironment(hello map[string]any) map[string]string {
	env := map[string]string{"python_path": s.o.Torch.Python, "kernel_only_timing": "profiler"}
	if s.o.Torch.GraphTiming {
		env["kernel_only_timing"] = "cuda_graph" // replays of the op captured in a CUDA graph
	}
	for k, v := range hello {
		if k == "hello" || v == nil {
			continue
		}
		env[k] = fmt.Sprint(v)
	}
	if s.nvml != nil {
		env["nvidia_driver"] = s.nvml.Driver
		var names []string
		for _, g := range s.gpus {
			names = append(names, s.nvml.GPUs[g].Name)
		}
		sort.Strings(names)
		env["gpus"] = strings.Join(names, ", ")
	}
	return env
}
