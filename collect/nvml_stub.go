//go:build !cgo

package collect

import "fmt"

// NVML is unavailable in builds without cgo: OpenNVML always fails and
// collect runs without GPU telemetry.
type NVML struct {
	Driver string
	GPUs   []GPUInfo
}

// OpenNVML reports that this build has no NVML.
func OpenNVML() (*NVML, error) {
	return nil, fmt.Errorf("%w (no NVML in this build: built with CGO_ENABLED=0)", ErrNoDriver)
}

// Sample is never reached: OpenNVML fails.
func (n *NVML) Sample(i int) (GPUSample, error) {
	return GPUSample{}, fmt.Errorf("no NVML in this build")
}

// LockClocks is never reached: OpenNVML fails.
func (n *NVML) LockClocks(i int) error { return fmt.Errorf("no NVML in this build") }

// Close does nothing.
func (n *NVML) Close() error { return nil }
