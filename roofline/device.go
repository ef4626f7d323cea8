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
	// eraMoEConfigs indexes the record's tuned fused-MoE files of the vLLM
	// era ftk prices (moeconfig.go).
	eraMoEConfigs map[vllmMoEConfigKey]spec.VLLMMoEConfig
}

// NewDevice builds the cost model's view of device record d.
func NewDevice(d *spec.Device) *Device {
	return &Device{Device: *d, Curves: archCurves(d.Arch), clockScale: clockScaleOf(d), eraMoEConfigs: indexEraMoEConfigs(d.VLLMMoEConfigs)}
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
