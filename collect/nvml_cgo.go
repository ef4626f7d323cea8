//go:build cgo

package collect

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML reads GPU names, memory, clocks, temperature, power and clock event
// reasons through the driver's NVML library, and locks clocks when asked
// and permitted.
type NVML struct {
	Driver string
	GPUs   []GPUInfo
	devs   []nvml.Device
	locked []bool
}

// OpenNVML initialises NVML. When Init fails (no driver, no
// libnvidia-ml.so.1) it returns an error wrapping ErrNoDriver and makes no
// other NVML call: go-nvml aborts the process on calls into a library it
// could not load.
func OpenNVML() (*NVML, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("%w (libnvidia-ml.so.1 cannot be loaded)", ErrNoDriver)
		}
		return nil, fmt.Errorf("%w (NVML init: %s)", ErrNoDriver, ret.Error())
	}
	n := &NVML{}
	if v, ret := nvml.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		n.Driver = v
	}
	count, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		nvml.Shutdown()
		return nil, fmt.Errorf("NVML device count: %s", ret.Error())
	}
	for i := 0; i < count; i++ {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			nvml.Shutdown()
			return nil, fmt.Errorf("NVML GPU %d: %s", i, ret.Error())
		}
		g := GPUInfo{Index: i}
		if name, ret := d.GetName(); ret == nvml.SUCCESS {
			g.Name = name
		}
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryBytes = mem.Total
		}
		n.GPUs = append(n.GPUs, g)
		n.devs = append(n.devs, d)
	}
	n.locked = make([]bool, count)
	return n, nil
}

// Sample reads the state of GPU i. Readings the GPU does not support stay
// zero.
func (n *NVML) Sample(i int) (GPUSample, error) {
	if i < 0 || i >= len(n.devs) {
		return GPUSample{}, fmt.Errorf("NVML: no GPU %d (%d found)", i, len(n.devs))
	}
	d := n.devs[i]
	var s GPUSample
	if v, ret := d.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		s.SMClockMHz = v
	}
	if v, ret := d.GetClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
		s.MemClockMHz = v
	}
	if v, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		s.TemperatureC = v
	}
	if v, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
		s.PowerW = float64(v) / 1e3
	}
	if v, ret := d.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
		s.ClockEventReasons = v
	} else if v, ret := d.GetCurrentClocksThrottleReasons(); ret == nvml.SUCCESS {
		s.ClockEventReasons = v
	}
	return s, nil
}

// LockClocks pins GPU i's SM clock at its maximum (needs root or the
// driver's permission); Close resets it.
func (n *NVML) LockClocks(i int) error {
	if i < 0 || i >= len(n.devs) {
		return fmt.Errorf("NVML: no GPU %d", i)
	}
	d := n.devs[i]
	maxSM, ret := d.GetMaxClockInfo(nvml.CLOCK_SM)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("lock clocks on GPU %d: max SM clock: %s", i, ret.Error())
	}
	if ret := d.SetGpuLockedClocks(maxSM, maxSM); ret != nvml.SUCCESS {
		return fmt.Errorf("lock clocks on GPU %d at %d MHz: %s", i, maxSM, ret.Error())
	}
	n.locked[i] = true
	return nil
}

// Close resets locked clocks and shuts NVML down.
func (n *NVML) Close() error {
	for i, l := range n.locked {
		if l {
			n.devs[i].ResetGpuLockedClocks()
		}
	}
	if ret := nvml.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", ret.Error())
	}
	return nil
}
