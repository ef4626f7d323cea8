package roofline

import "github.com/ftk-dev/ftk/spec"

// Device is a catalog device as the cost model prices it: its record's
// public figures with its generation's fitted kernel-class curves and the
// clock scale of its measured matmul rate.
type Device struct {
	spec.Device
	// Curves are the generation's fitted kernel-class curves (curves.go).
	Curves Curves
	// clockScale caches ClockScale (matmulrate.go); 0 reads as 1.
	clockScale float64
	// eraMoEConfigs indexes the record's dated tuned fused-MoE files
	// (moeconfig.go).
	eraMoEConfigs map[vllmMoEConfigKey]spec.VLLMMoEConfig
}

// NewDevice builds the cost model's view of device record d.
func NewDevice(d *spec.Device) *Device {
	dev := &Device{Device: *d, Curves: archCurves(d.Arch), clockScale: clockScaleOf(d), eraMoEConfigs: indexEraMoEConfigs(d.VLLMMoEConfigs)}
	if d.Arch == spec.ArchBlackwell && !d.NVLink {
		// The Blackwell cards without NVLink in the catalog (RTX PRO
		// 6000) are sm_120 parts, where FlashInfer has TRT-LLM decode
		// kernels only (vllm/utils/flashinfer.py,
		// supports_trtllm_attention) and vLLM does not take them by
		// default: their attention keeps the attention classes'
		// curves, not the B200's TRT-LLM and Triton terms.
		dev.Curves.TRTLLM, dev.Curves.TritonAttention = nil, nil
	}
	if d.Arch == spec.ArchBlackwell && d.ComputeCapability != blackwellCuBLASCapability {
		dev.Curves.CuBLAS = nil // cublas.go: fitted on the data-center part only
	}
	return dev
}

// LookupDevice resolves a catalog device name (spec.LookupDevice) and
// builds its cost model.
func LookupDevice(name string) (*Device, error) {
	d, err := spec.LookupDevice(name)
	if err != nil {
		return nil, err
	}
	return NewDevice(d), nil
}
