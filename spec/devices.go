package spec

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The device catalog is one record per device, devices/<name>.yaml,
// embedded in the binary: every figure and name ftk knows of the device,
// each with its source. Adding a device is adding its record (and, for a
// new generation, that generation's curves in roofline/curves.go).
//
//go:embed devices/*.yaml
var deviceFiles embed.FS

// deviceCatalog is the parsed records, by name, and their aliases.
type deviceCatalog struct {
	devices map[string]Device
	aliases map[string]string // alias -> name
}

// builtinDevices parses the embedded records once.
var builtinDevices = sync.OnceValues(func() (*deviceCatalog, error) {
	return readDeviceCatalog(deviceFiles, "devices")
})

// DatasheetFigures are the figures a record's "datasheet" source covers
// when they have no source of their own.
var DatasheetFigures = []string{"peak_bf16_tflops", "peak_fp8_tflops", "memory_gib", "hbm_gbps", "nvlink_gbps"}

// readDeviceCatalog reads every *.yaml record of folder dir of fsys.
func readDeviceCatalog(fsys fs.FS, dir string) (*deviceCatalog, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	c := &deviceCatalog{devices: map[string]Device{}, aliases: map[string]string{}}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		d, err := parseDeviceRecord(data)
		if err != nil {
			return nil, fmt.Errorf("device record %s: %w", f, err)
		}
		if want := strings.TrimSuffix(path.Base(f), ".yaml"); d.Name != want {
			return nil, fmt.Errorf("device record %s: name %q, want the file's name %q", f, d.Name, want)
		}
		if _, dup := c.devices[d.Name]; dup {
			return nil, fmt.Errorf("device record %s: device %q defined twice", f, d.Name)
		}
		c.devices[d.Name] = d
	}
	for _, d := range c.devices {
		for _, a := range d.Aliases {
			if other, dup := c.aliases[a]; dup {
				return nil, fmt.Errorf("device record %s: alias %q is also %s's", d.Name, a, other)
			}
			if _, isName := c.devices[a]; isName {
				return nil, fmt.Errorf("device record %s: alias %q is a device's name", d.Name, a)
			}
			c.aliases[a] = d.Name
		}
	}
	return c, nil
}

// parseDeviceRecord decodes one record strictly (an unknown key is an
// error) and checks it is complete.
func parseDeviceRecord(data []byte) (Device, error) {
	var d Device
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil && !errors.Is(err, io.EOF) {
		return d, err
	}
	return d, d.checkComplete()
}

// deviceFigures are the YAML keys of Device's figures and names: every
// field but the name and the sources.
func deviceFigures() []string {
	t := reflect.TypeOf(Device{})
	var keys []string
	for i := range t.NumField() {
		k := t.Field(i).Tag.Get("yaml")
		if k != "name" && k != "sources" {
			keys = append(keys, k)
		}
	}
	return keys
}

// Source is where figure key (a YAML key of the record) comes from: its
// own source, or the datasheet's for DatasheetFigures.
func (d *Device) Source(key string) string {
	if s := d.Sources[key]; s != "" {
		return s
	}
	if slices.Contains(DatasheetFigures, key) {
		return d.Sources["datasheet"]
	}
	return ""
}

// checkComplete reports the first figure a record lacks: every figure
// that bounds a price set (a zero is allowed only where the field says it
// means "none": FP8 peak, matmul rate, L2, tuned files), a known
// generation, and a source for every figure, none for an unknown one.
func (d *Device) checkComplete() error {
	switch {
	case d.Name == "" || d.Name != strings.ToLower(d.Name):
		return fmt.Errorf("name %q: want a lower-case name", d.Name)
	case d.Description == "":
		return errors.New("no description")
	case !slices.Contains([]string{ArchHopper, ArchAmpere, ArchAda, ArchBlackwell}, d.Arch):
		return fmt.Errorf("arch %q: want %s, %s, %s or %s (a new generation needs its curves in roofline/curves.go)", d.Arch, ArchHopper, ArchAmpere, ArchAda, ArchBlackwell)
	case d.VLLMDeviceName == "":
		return errors.New("no vllm_device_name (torch.cuda.get_device_name with spaces made underscores)")
	}
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"peak_bf16_tflops", d.PeakBF16TFLOPS}, {"memory_gib", d.MemoryGiB}, {"hbm_gbps", d.HBMGBps},
		{"sms", float64(d.SMs)}, {"nvlink_gbps", d.NVLinkGBps}, {"network_gbps", d.NetworkGBps},
		{"host_link_gbps", d.HostLinkGBps},
		{"launch_us", d.LaunchUs}, {"kernel_floor_us", d.KernelFloorUs}, {"host_cpu_factor", d.HostCPUFactor},
	} {
		if !(f.v > 0) {
			return fmt.Errorf("%s is %g: want a positive figure", f.key, f.v)
		}
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"peak_fp8_tflops", d.PeakFP8TFLOPS}, {"matmul_bf16_tflops", d.MatmulBF16TFLOPS}, {"l2_mb", d.L2MB}} {
		if f.v < 0 {
			return fmt.Errorf("%s is %g: want a figure, or 0 for none", f.key, f.v)
		}
	}
	figures := deviceFigures()
	for _, k := range figures {
		if d.Source(k) == "" {
			return fmt.Errorf("no source for %s (sources: %s: ...)", k, k)
		}
	}
	for k := range d.Sources {
		if k != "datasheet" && !slices.Contains(figures, k) {
			return fmt.Errorf("sources names %q, no figure of a record (%s)", k, strings.Join(figures, ", "))
		}
	}
	for _, c := range d.VLLMMoEConfigs {
		if c.Experts <= 0 || c.WidthN <= 0 || c.Change == "" || (c.Dtype != "" && c.Dtype != "fp8_w8a8") ||
			(c.Added != "" && (len(c.Added) != 10 || c.Added[4] != '-' || c.Added[7] != '-')) {
			return fmt.Errorf("vllm_moe_configs: %s (added %q, change %q): want E, N > 0, dtype \"\" or fp8_w8a8, added YYYY-MM-DD or empty, a change", c.FileName(d.VLLMDeviceName), c.Added, c.Change)
		}
	}
	return nil
}
