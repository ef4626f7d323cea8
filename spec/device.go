package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Device is one accelerator model: the public figures that bound its speed.
type Device struct {
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	PeakBF16TFLOPS float64 `json:"peak_bf16_tflops"` // dense, no sparsity
	MemoryGiB      float64 `json:"memory_gib"`       // HBM capacity
	HBMGBps        float64 `json:"hbm_gbps"`         // HBM bandwidth, GB/s (1e9)
	SMs            int     `json:"sms"`
	// NVLinkGBps is the per-GPU NVLink bandwidth in one direction, GB/s.
	NVLinkGBps float64 `json:"nvlink_gbps"`
	// LaunchUs is the typical host cost of launching one kernel from an
	// eager PyTorch op (dispatch plus cudaLaunchKernel), microseconds.
	LaunchUs float64 `json:"launch_us"`
	// KernelFloorUs is the shortest GPU time of any kernel, microseconds.
	KernelFloorUs float64 `json:"kernel_floor_us"`
}

// MemoryBytes is the HBM capacity in bytes.
func (d *Device) MemoryBytes() int64 { return int64(d.MemoryGiB * (1 << 30)) }

// The device catalog. Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5:
// 989 TFLOPS dense BF16, 80 GB HBM3 at 3.35 TB/s, 900 GB/s NVLink
// bidirectional), NVIDIA H200 datasheet (141 GB HBM3e at 4.8 TB/s), the H800
// (H100 with NVLink cut to 400 GB/s, per NVIDIA's China export variant
// notes), NVIDIA A100 datasheet (SXM 80GB: 312 TFLOPS BF16, 2,039 GB/s,
// 600 GB/s NVLink) and A800 (A100 with 400 GB/s NVLink). SM counts from the
// Hopper and Ampere architecture whitepapers (H100 SXM5 132, A100 108).
// Launch costs are typical eager PyTorch figures (about 5 us per op from
// Python dispatch to kernel start) measured in published profiling studies.
var deviceCatalog = map[string]Device{
	"h100": {Description: "NVIDIA H100 SXM5 80GB", PeakBF16TFLOPS: 989, MemoryGiB: 80, HBMGBps: 3350, SMs: 132, NVLinkGBps: 450, LaunchUs: 5, KernelFloorUs: 2.5},
	"h200": {Description: "NVIDIA H200 SXM 141GB", PeakBF16TFLOPS: 989, MemoryGiB: 141, HBMGBps: 4800, SMs: 132, NVLinkGBps: 450, LaunchUs: 5, KernelFloorUs: 2.5},
	"h800": {Description: "NVIDIA H800 SXM5 80GB", PeakBF16TFLOPS: 989, MemoryGiB: 80, HBMGBps: 3350, SMs: 132, NVLinkGBps: 200, LaunchUs: 5, KernelFloorUs: 2.5},
	"a100": {Description: "NVIDIA A100 SXM4 80GB", PeakBF16TFLOPS: 312, MemoryGiB: 80, HBMGBps: 2039, SMs: 108, NVLinkGBps: 300, LaunchUs: 6, KernelFloorUs: 3},
	"a800": {Description: "NVIDIA A800 SXM4 80GB", PeakBF16TFLOPS: 312, MemoryGiB: 80, HBMGBps: 2039, SMs: 108, NVLinkGBps: 200, LaunchUs: 6, KernelFloorUs: 3},
}

var deviceAliases = map[string]string{
	"h100-sxm": "h100", "h100_sxm": "h100", "h100-80gb": "h100", "nvidia h100 80gb hbm3": "h100",
	"h200-sxm": "h200", "nvidia h200": "h200",
	"a100-80gb": "a100", "a100_80gb": "a100", "nvidia a100-sxm4-80gb": "a100",
	"a800-80gb": "a800", "nvidia a800-sxm4-80gb": "a800",
	"nvidia h800": "h800",
}

// LookupDevice resolves a device name (case-insensitive; aliases such as
// "a100-80gb" accepted).
func LookupDevice(name string) (*Device, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := deviceAliases[n]; ok {
		n = a
	}
	d, ok := deviceCatalog[n]
	if !ok {
		return nil, fmt.Errorf("unknown device %q: known devices are %s", name, strings.Join(DeviceNames(), ", "))
	}
	d.Name = n
	return &d, nil
}

// DeviceNames lists the catalog, sorted.
func DeviceNames() []string {
	names := make([]string, 0, len(deviceCatalog))
	for n := range deviceCatalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
