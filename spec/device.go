package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Device is one accelerator model: the public figures that bound its
// speed and the names other tools give it, as its record in devices/
// holds them (devices.go), each figure with its source (Sources).
type Device struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Arch is the generation whose kernel curves the device uses (hopper,
	// ampere, ada, blackwell).
	Arch string `yaml:"arch"`
	// Aliases are other spellings LookupDevice accepts (lower case):
	// torch.cuda.get_device_name's, those of profiles and configs.
	Aliases        []string `yaml:"aliases"`
	PeakBF16TFLOPS float64  `yaml:"peak_bf16_tflops"` // dense, no sparsity
	// PeakFP8TFLOPS is the dense FP8 tensor-core peak; 0 when the device
	// has no FP8 tensor cores (FP8 weights then run at the BF16 peak, as
	// vLLM's weight-only FP8 kernels do on Ampere).
	PeakFP8TFLOPS float64 `yaml:"peak_fp8_tflops"`
	// MatmulBF16TFLOPS is a public measurement of the device's best dense
	// BF16 matmul rate, 0 where none was read (roofline/matmulrate.go).
	MatmulBF16TFLOPS float64 `yaml:"matmul_bf16_tflops"`
	MemoryGiB        float64 `yaml:"memory_gib"` // HBM capacity
	HBMGBps          float64 `yaml:"hbm_gbps"`   // HBM bandwidth, GB/s (1e9)
	SMs              int     `yaml:"sms"`
	// ComputeCapability is the CUDA compute capability ("10.0"), "" where
	// none is recorded: it tells Blackwell's data-center parts (10.0,
	// tcgen05 MMA) from its workstation ones (12.0), whose GEMMs the device
	// model prices apart (roofline/cublas.go).
	ComputeCapability string `yaml:"compute_capability"`
	// L2MB is the L2 cache, MB (1e6 bytes); 0 where no source was read
	// (the L2 is then never counted on: roofline/warml2.go).
	L2MB float64 `yaml:"l2_mb"`
	// NVLink says the GPUs of a node share an NVLink switch (vLLM's custom
	// all-reduce needs it).
	NVLink bool `yaml:"nvlink"`
	// NVLinkGBps is the per-GPU NVLink bandwidth in one direction, GB/s
	// (PCIe when the device has no NVLink).
	NVLinkGBps float64 `yaml:"nvlink_gbps"`
	// NetworkGBps is the per-GPU inter-node bandwidth in one direction,
	// GB/s (one NIC per GPU in the reference systems).
	NetworkGBps float64 `yaml:"network_gbps"`
	// HostLinkGBps is the effective bandwidth between one GPU and host
	// memory in one direction, GB/s, for KV blocks copied to and from a
	// host tier (simulate's --kv-offloading-size); its source says whether
	// it was measured or is a share of the link's paper rate.
	HostLinkGBps float64 `yaml:"host_link_gbps"`
	// LaunchUs is the typical host cost of launching one kernel from an
	// eager PyTorch op (dispatch plus cudaLaunchKernel), microseconds.
	LaunchUs float64 `yaml:"launch_us"`
	// KernelFloorUs is the shortest GPU time of any kernel, microseconds.
	KernelFloorUs float64 `yaml:"kernel_floor_us"`
	// HostCPUFactor is how much slower than the reference host (the
	// current server CPUs of an H100 system, 1.0) the host CPUs of the
	// device's systems run the engine's Python: it scales the default host
	// model and issue costs (roofline/hostcost.go, roofline/issuecost.go).
	HostCPUFactor float64 `yaml:"host_cpu_factor"`
	// VLLMDeviceName is the device_name vLLM puts in the names of its
	// tuned fused-MoE config files for the device.
	VLLMDeviceName string `yaml:"vllm_device_name"`
	// VLLMMoEConfigs are vLLM's tuned fused-MoE config files for the
	// device (roofline/moeconfig.go prices with the ones of its era).
	VLLMMoEConfigs []VLLMMoEConfig `yaml:"vllm_moe_configs"`
	// Sources names, per figure (the YAML key), where it comes from;
	// "datasheet" stands for the figures the vendor's datasheet gives
	// (DatasheetFigures) where they have no source of their own.
	Sources map[string]string `yaml:"sources"`
}

// VLLMMoEConfig is one of vLLM's tuned fused-MoE config files
// (vllm/model_executor/layers/fused_moe/configs/), named
// E=<experts>,N=<width>,device_name=<device>[,dtype=<dtype>]
// [,block_shape=[<block>,<block>]].json (get_config_file_name), with the
// date its name first appeared on vLLM's main ("" where only bounded)
// and the change that added it (a PR number or commit).
type VLLMMoEConfig struct {
	Experts int    `yaml:"e"`
	WidthN  int    `yaml:"n"`
	Dtype   string `yaml:"dtype"` // "" (BF16) or fp8_w8a8
	Block   int    `yaml:"block"` // FP8 quantization block, 0 per tensor
	Added   string `yaml:"added"`
	Change  string `yaml:"change"`
}

// FileName is the config file's name for the device vLLM calls
// deviceName, as vLLM's get_config_file_name builds it.
func (c VLLMMoEConfig) FileName(deviceName string) string {
	s := fmt.Sprintf("E=%d,N=%d,device_name=%s", c.Experts, c.WidthN, deviceName)
	if c.Dtype != "" {
		s += ",dtype=" + c.Dtype
	}
	if c.Block > 0 {
		s += fmt.Sprintf(",block_shape=[%d,%d]", c.Block, c.Block)
	}
	return s + ".json"
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

// LookupDevice resolves a device name (case-insensitive; aliases such as
// "a100-80gb" accepted) to a copy of its record.
func LookupDevice(name string) (*Device, error) {
	c, err := builtinDevices()
	if err != nil {
		return nil, err
	}
	return c.lookup(name)
}

// DeviceNames lists the catalog, sorted.
func DeviceNames() []string {
	c, err := builtinDevices()
	if err != nil {
		return nil
	}
	return c.names()
}

// lookup resolves name in catalog c.
func (c *deviceCatalog) lookup(name string) (*Device, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := c.aliases[n]; ok {
		n = a
	}
	d, ok := c.devices[n]
	if !ok {
		return nil, fmt.Errorf("unknown device %q: known devices are %s", name, strings.Join(c.names(), ", "))
	}
	return &d, nil
}

// names lists c's devices, sorted.
func (c *deviceCatalog) names() []string {
	names := make([]string, 0, len(c.devices))
	for n := range c.devices {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
