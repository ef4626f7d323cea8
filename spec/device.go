package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Device is one accelerator model: the public figures that bound its speed
// and the fitted kernel curves of its generation.
type Device struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Arch is the generation whose kernel curves the device uses (hopper,
	// ampere, ada, blackwell).
	Arch           string  `json:"arch"`
	PeakBF16TFLOPS float64 `json:"peak_bf16_tflops"` // dense, no sparsity
	// PeakFP8TFLOPS is the dense FP8 tensor-core peak; 0 when the device
	// has no FP8 tensor cores (FP8 weights then run at the BF16 peak, as
	// vLLM's weight-only FP8 kernels do on Ampere).
	PeakFP8TFLOPS float64 `json:"peak_fp8_tflops"`
	// MatmulBF16TFLOPS is a public measurement of the device's best dense
	// BF16 matmul rate, 0 where none was read (roofline/matmulrate.go).
	MatmulBF16TFLOPS float64 `json:"matmul_bf16_tflops,omitempty"`
	MemoryGiB        float64 `json:"memory_gib"` // HBM capacity
	HBMGBps          float64 `json:"hbm_gbps"`   // HBM bandwidth, GB/s (1e9)
	SMs              int     `json:"sms"`
	// L2MB is the L2 cache, MB (1e6 bytes); 0 where no source was read
	// (the L2 is then never counted on: roofline/warml2.go).
	L2MB float64 `json:"l2_mb"`
	// NVLinkGBps is the per-GPU NVLink bandwidth in one direction, GB/s
	// (PCIe when the device has no NVLink).
	NVLinkGBps float64 `json:"nvlink_gbps"`
	// NVLink says the GPUs of a node share an NVLink switch (vLLM's custom
	// all-reduce needs it).
	NVLink bool `json:"nvlink"`
	// NetworkGBps is the per-GPU inter-node bandwidth in one direction,
	// GB/s (one NIC per GPU in the reference systems).
	NetworkGBps float64 `json:"network_gbps"`
	// LaunchUs is the typical host cost of launching one kernel from an
	// eager PyTorch op (dispatch plus cudaLaunchKernel), microseconds.
	LaunchUs float64 `json:"launch_us"`
	// KernelFloorUs is the shortest GPU time of any kernel, microseconds.
	KernelFloorUs float64 `json:"kernel_floor_us"`
}

// Device generations: each has one table of kernel-class curves.
const (
	ArchHopper    = "hopper"
	ArchAmpere    = "ampere"
	ArchAda       = "ada"
	ArchBlackwell = "blackwell"
)

// MemoryBytes is the HBM capacity in bytes.
func (d *Device) MemoryBytes() int64 { return int64(d.MemoryGiB * (1 << 30)) }

// PeakTFLOPS is the dense tensor-core peak: the FP8 one for FP8 operands
// where the device has FP8 tensor cores, else BF16.
func (d *Device) PeakTFLOPS(fp8 bool) float64 {
	if fp8 && d.PeakFP8TFLOPS > 0 {
		return d.PeakFP8TFLOPS
	}
	return d.PeakBF16TFLOPS
}

// The device catalog. Every figure is from the vendor's public datasheet
// (dense tensor-core peaks, no sparsity; NVLink per direction = half the
// quoted bidirectional figure):
//   - H100 SXM5 80GB: NVIDIA H100 Tensor Core GPU datasheet (2023): 989
//     TFLOPS BF16, 1,979 FP8, 3.35 TB/s HBM3, NVLink 900 GB/s; 132 SMs
//     (NVIDIA Hopper architecture whitepaper); DGX H100: one 400 Gb/s
//     ConnectX-7 per GPU (DGX H100 user guide).
//   - H100 PCIe 80GB: same datasheet: 756 TFLOPS BF16, 1,513 FP8, 2.0 TB/s
//     HBM2e, 114 SMs; NVLink bridge 600 GB/s for pairs, else PCIe Gen5
//     (64 GB/s per direction, used here).
//   - H200 SXM 141GB: NVIDIA H200 datasheet (2024): H100 compute, 4.8 TB/s
//     HBM3e, NVLink 900 GB/s.
//   - H800 SXM5 80GB: the H100 with NVLink cut to 400 GB/s (NVIDIA's China
//     export variant; DeepSeek-V3 technical report, arXiv 2412.19437,
//     section 3.1: "NVLink 160 GB/s achievable", "400Gbps InfiniBand").
//   - H20 96GB: NVIDIA HGX H20 product brief (2024): 148 TFLOPS BF16, 296
//     FP8, 4.0 TB/s HBM3, NVLink 900 GB/s; 78 SMs as reported by public
//     teardown/driver listings (guess-grade).
//   - A100 SXM4 80GB: NVIDIA A100 datasheet (2021): 312 TFLOPS BF16, 2,039
//     GB/s HBM2e, NVLink 600 GB/s, 108 SMs; DGX A100: 200 Gb/s HDR per GPU.
//   - A800 SXM4 80GB: the A100 with NVLink cut to 400 GB/s.
//   - L40S 48GB: NVIDIA L40S datasheet (2023): 362 TFLOPS BF16, 733 FP8,
//     864 GB/s GDDR6, 142 SMs, no NVLink (PCIe Gen4: 32 GB/s per direction).
//   - RTX 4090 D 24GB (the GPU of vLLM issue #45709, a calibration point
//     of the host timeline): 114 SMs at 2.52 GHz boost, 24 GB GDDR6X at
//     1,008 GB/s (NVIDIA's product page); dense BF16 with FP32 accumulation
//     is the Ada whitepaper's RTX 4090 figure (165.2 TFLOPS, 128 SMs)
//     scaled by SM count; no NVLink and no PCIe peer-to-peer on GeForce
//     cards: NCCL over PCIe 4.0 x16, 32 GB/s a direction (at the
//     all-reduce MemEff, 24.9 GB/s of bus bandwidth: 4 x RTX 4090 measure
//     25.7, see pcie_collective.go).
//   - RTX 4090 24GB (the GPU of LLMServingSim's RTX 4090 validation run):
//     the Ada whitepaper's figures, 128 SMs at 2.52 GHz boost, 165.2
//     TFLOPS dense BF16 with FP32 accumulation, 24 GB GDDR6X at 1,008
//     GB/s; no NVLink and no PCIe peer-to-peer on GeForce cards, as the
//     RTX 4090 D.
//   - RTX PRO 6000 Blackwell Server Edition 96GB (NVIDIA GTC 2025
//     announcement and datasheet): GB202 with 188 SMs, 96 GB GDDR7 at
//     1597 GB/s (the Server Edition's figure, as LLMServingSim's RTXPRO6000
//     config uses; the Workstation Edition has 1792), 4000 FP4 AI TOPS with
//     sparsity, that is 1000 TFLOPS dense FP8 and 500 dense BF16; no
//     NVLink: PCIe Gen5 x16, 64 GB/s a direction.
//   - B200 180GB: NVIDIA DGX B200 datasheet (2024; 72 PFLOPS FP8 training,
//     1,440 GB HBM3e, 64 TB/s for 8 GPUs): 2,250 TFLOPS BF16, 4,500 FP8,
//     8 TB/s, NVLink 5 1.8 TB/s, 148 SMs (Blackwell whitepaper); 400 Gb/s
//     ConnectX-7 per GPU.
//
// L2 caches: 50 MB on H100 SXM5 (NVIDIA H100 Tensor Core GPU Architecture
// whitepaper, 2022) and on H100 PCIe (Chips and Cheese, "Nvidia's H100:
// Funny L2, and Tons of Bandwidth", 2023); H800 and H200 take the H100
// SXM5's (same GH100 configuration: a stated approximation); 40 MB on
// A100 (NVIDIA A100 whitepaper, 2020) and A800; the others are left 0.
//
// Launch costs are eager PyTorch figures (about 5 us from Python dispatch
// to kernel start on current server CPUs, 6 us on the older hosts of
// Ampere systems), as measured in published profiling studies; kernel
// floors are those of the generation's fitted curves (roofline/curves.go).
var deviceCatalog = map[string]Device{
	"h100":       {Description: "NVIDIA H100 SXM5 80GB", Arch: ArchHopper, PeakBF16TFLOPS: 989, PeakFP8TFLOPS: 1979, MemoryGiB: 80, HBMGBps: 3350, SMs: 132, L2MB: 50, NVLink: true, NVLinkGBps: 450, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"h100-pcie":  {Description: "NVIDIA H100 PCIe 80GB", Arch: ArchHopper, PeakBF16TFLOPS: 756, PeakFP8TFLOPS: 1513, MemoryGiB: 80, HBMGBps: 2000, SMs: 114, L2MB: 50, NVLinkGBps: 64, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"h200":       {Description: "NVIDIA H200 SXM 141GB", Arch: ArchHopper, PeakBF16TFLOPS: 989, PeakFP8TFLOPS: 1979, MemoryGiB: 141, HBMGBps: 4800, SMs: 132, L2MB: 50, NVLink: true, NVLinkGBps: 450, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"h800":       {Description: "NVIDIA H800 SXM5 80GB", Arch: ArchHopper, PeakBF16TFLOPS: 989, PeakFP8TFLOPS: 1979, MemoryGiB: 80, HBMGBps: 3350, SMs: 132, L2MB: 50, NVLink: true, NVLinkGBps: 200, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"h20":        {Description: "NVIDIA H20 96GB", Arch: ArchHopper, PeakBF16TFLOPS: 148, PeakFP8TFLOPS: 296, MemoryGiB: 96, HBMGBps: 4000, SMs: 78, NVLink: true, NVLinkGBps: 450, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"a100":       {Description: "NVIDIA A100 SXM4 80GB", Arch: ArchAmpere, PeakBF16TFLOPS: 312, MemoryGiB: 80, HBMGBps: 2039, SMs: 108, L2MB: 40, NVLink: true, NVLinkGBps: 300, NetworkGBps: 25, LaunchUs: 6, KernelFloorUs: 3},
	"a800":       {Description: "NVIDIA A800 SXM4 80GB", Arch: ArchAmpere, PeakBF16TFLOPS: 312, MemoryGiB: 80, HBMGBps: 2039, SMs: 108, L2MB: 40, NVLink: true, NVLinkGBps: 200, NetworkGBps: 25, LaunchUs: 6, KernelFloorUs: 3},
	"l40s":       {Description: "NVIDIA L40S 48GB", Arch: ArchAda, PeakBF16TFLOPS: 362, PeakFP8TFLOPS: 733, MemoryGiB: 48, HBMGBps: 864, SMs: 142, NVLinkGBps: 32, NetworkGBps: 25, LaunchUs: 5, KernelFloorUs: 2.5},
	"rtx4090":    {Description: "NVIDIA GeForce RTX 4090 24GB (PCIe, no NVLink)", Arch: ArchAda, PeakBF16TFLOPS: 165.2, MemoryGiB: 24, HBMGBps: 1008, SMs: 128, NVLinkGBps: 32, NetworkGBps: 25, LaunchUs: 5, KernelFloorUs: 2.5},
	"rtx4090d":   {Description: "NVIDIA GeForce RTX 4090 D 24GB (PCIe, no NVLink)", Arch: ArchAda, PeakBF16TFLOPS: 147, MemoryGiB: 24, HBMGBps: 1008, SMs: 114, NVLinkGBps: 32, NetworkGBps: 25, LaunchUs: 5, KernelFloorUs: 2.5},
	"rtxpro6000": {Description: "NVIDIA RTX PRO 6000 Blackwell Server Edition 96GB (PCIe, no NVLink)", Arch: ArchBlackwell, PeakBF16TFLOPS: 500, PeakFP8TFLOPS: 1000, MemoryGiB: 96, HBMGBps: 1597, SMs: 188, NVLinkGBps: 64, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
	"b200":       {Description: "NVIDIA B200 180GB", Arch: ArchBlackwell, PeakBF16TFLOPS: 2250, PeakFP8TFLOPS: 4500, MemoryGiB: 180, HBMGBps: 8000, SMs: 148, NVLink: true, NVLinkGBps: 900, NetworkGBps: 50, LaunchUs: 5, KernelFloorUs: 2.5},
}

var deviceAliases = map[string]string{
	"h100-sxm": "h100", "h100_sxm": "h100", "h100-80gb": "h100", "nvidia h100 80gb hbm3": "h100",
	"h200-sxm": "h200", "nvidia h200": "h200",
	"a100-80gb": "a100", "a100_80gb": "a100", "nvidia a100-sxm4-80gb": "a100",
	"a800-80gb": "a800", "nvidia a800-sxm4-80gb": "a800",
	"nvidia h800": "h800", "h800-sxm": "h800",
	"h100-pcie-80gb": "h100-pcie", "h100_pcie": "h100-pcie", "nvidia h100 pcie": "h100-pcie",
	"nvidia h20": "h20", "h20-96gb": "h20",
	"nvidia l40s": "l40s",
	"b200-180gb":  "b200", "nvidia b200": "b200",
	"rtx-pro-6000": "rtxpro6000", "nvidia rtx pro 6000 blackwell server edition": "rtxpro6000",
	"4090": "rtx4090", "rtx-4090": "rtx4090", "nvidia geforce rtx 4090": "rtx4090",
	"4090d": "rtx4090d", "rtx-4090d": "rtx4090d", "nvidia geforce rtx 4090 d": "rtx4090d",
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
	d.MatmulBF16TFLOPS = matmulBF16TFLOPS[n]
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
