package collect

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// ErrNoDriver is returned when no NVIDIA driver (NVML) can be used: the
// library is missing, fails to initialise, or this build has no cgo.
var ErrNoDriver = errors.New("no NVIDIA driver found")

// GPUInfo describes one GPU as the driver reports it.
type GPUInfo struct {
	Index       int
	Name        string
	MemoryBytes uint64
}

// GPUSample is one reading of a GPU's state.
type GPUSample struct {
	SMClockMHz, MemClockMHz uint32
	TemperatureC            uint32
	PowerW                  float64
	// ClockEventReasons is NVML's bit set of reasons the clocks are
	// held down (clock event, formerly throttle, reasons).
	ClockEventReasons uint64
}

// NVML clock event reason bits (nvml.h) and the ones that make a
// measurement unrepresentative: power capping, thermal and hardware
// slowdowns. Idle, application clock settings and sync boost do not.
const (
	reasonGpuIdle           = 0x1
	reasonAppClocksSetting  = 0x2
	reasonSwPowerCap        = 0x4
	reasonHwSlowdown        = 0x8
	reasonSyncBoost         = 0x10
	reasonSwThermalSlowdown = 0x20
	reasonHwThermalSlowdown = 0x40
	reasonHwPowerBrake      = 0x80
	reasonDisplayClock      = 0x100
	throttleMask            = reasonSwPowerCap | reasonHwSlowdown | reasonSwThermalSlowdown | reasonHwThermalSlowdown | reasonHwPowerBrake
)

var reasonNames = []struct {
	bit  uint64
	name string
}{
	{reasonGpuIdle, "gpu_idle"}, {reasonAppClocksSetting, "applications_clocks_setting"},
	{reasonSwPowerCap, "sw_power_cap"}, {reasonHwSlowdown, "hw_slowdown"}, {reasonSyncBoost, "sync_boost"},
	{reasonSwThermalSlowdown, "sw_thermal_slowdown"}, {reasonHwThermalSlowdown, "hw_thermal_slowdown"},
	{reasonHwPowerBrake, "hw_power_brake_slowdown"}, {reasonDisplayClock, "display_clock_setting"},
}

// ReasonString names the bits of a clock event reason set, joined by '|'.
func ReasonString(r uint64) string {
	var names []string
	for _, n := range reasonNames {
		if r&n.bit != 0 {
			names = append(names, n.name)
			r &^= n.bit
		}
	}
	if r != 0 {
		names = append(names, fmt.Sprintf("0x%x", r))
	}
	return strings.Join(names, "|")
}

// Throttled reports whether a reason set means the GPU ran slowed down.
func Throttled(r uint64) bool { return r&throttleMask != 0 }

// gpuRecord is what a row keeps of the samples taken around its
// measurement: the lowest clocks, the highest temperature and power, and
// every reason seen.
type gpuRecord struct {
	valid bool
	GPUSample
}

func mergeSamples(a, b GPUSample) gpuRecord {
	return gpuRecord{valid: true, GPUSample: GPUSample{
		SMClockMHz: min(a.SMClockMHz, b.SMClockMHz), MemClockMHz: min(a.MemClockMHz, b.MemClockMHz),
		TemperatureC: max(a.TemperatureC, b.TemperatureC), PowerW: math.Max(a.PowerW, b.PowerW),
		ClockEventReasons: a.ClockEventReasons | b.ClockEventReasons,
	}}
}

func (g gpuRecord) fill(v map[string]string) {
	if !g.valid {
		return
	}
	v["sm_clock_mhz"], v["mem_clock_mhz"] = itoa(int(g.SMClockMHz)), itoa(int(g.MemClockMHz))
	v["temperature_c"], v["power_w"] = itoa(int(g.TemperatureC)), ftoa(g.PowerW)
	v["clock_event_reasons"] = ReasonString(g.ClockEventReasons)
}

// CheckDevice refuses a GPU that is not the device the sweep is labelled
// with: by name when the catalog knows the GPU's name, else by memory size
// (within 10%). force accepts the label anyway.
func CheckDevice(label *spec.Device, g GPUInfo, force bool) error {
	if force {
		return nil
	}
	if d, err := spec.LookupDevice(g.Name); err == nil {
		if d.Name != label.Name {
			return fmt.Errorf("GPU %d is a %s (%s), not %s: pass --device %s, or --force-device to label it %s anyway",
				g.Index, g.Name, d.Name, label.Name, d.Name, label.Name)
		}
		return nil
	}
	gib := float64(g.MemoryBytes) / (1 << 30)
	if math.Abs(gib-label.MemoryGiB) > 0.1*label.MemoryGiB {
		return fmt.Errorf("GPU %d (%s, %.0f GiB) does not look like %s (%g GiB): pass the right --device, or --force-device",
			g.Index, g.Name, gib, label.Name, label.MemoryGiB)
	}
	return nil
}
