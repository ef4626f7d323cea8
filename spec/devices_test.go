package spec

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// Every record of devices/ parses strictly and is complete: every figure
// set and sourced (parseDeviceRecord), its name the file's, and every
// alias resolving to it.
func TestDeviceRecordsComplete(t *testing.T) {
	c, err := builtinDevices()
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(deviceFiles, "devices/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(c.devices) || len(files) < 12 {
		t.Fatalf("%d record files, %d devices: want one device a file, at least the 12 of the catalog", len(files), len(c.devices))
	}
	for _, n := range DeviceNames() {
		d, err := LookupDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.checkComplete(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		for _, a := range append(d.Aliases, strings.ToUpper(n)) {
			if got, err := LookupDevice(a); err != nil || got.Name != n {
				t.Errorf("%s: alias %q resolves to %v, %v", n, a, got, err)
			}
		}
	}
}

// A new device is its record alone: a copy of the H100's under a new
// name and alias reads into a catalog and resolves, with no table of Go
// code to extend.
func TestNewDeviceIsOneRecord(t *testing.T) {
	h100, err := fs.ReadFile(deviceFiles, "devices/h100.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec := strings.Replace(string(h100), "name: h100\n", "name: h100-nvl\n", 1)
	rec = strings.Replace(rec, `aliases: [`, `aliases: ["nvidia h100 nvl", `, 1)
	c, err := readDeviceCatalog(fstest.MapFS{
		"d/h100-nvl.yaml": {Data: []byte(rec)},
		"d/h200.yaml":     {Data: mustRead(t, "devices/h200.yaml")},
	}, "d")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.lookup("NVIDIA H100 NVL")
	if err != nil || d.Name != "h100-nvl" || d.PeakBF16TFLOPS != 989 || len(d.VLLMMoEConfigs) == 0 {
		t.Fatalf("new record: %+v, %v", d, err)
	}
	if !slices.Equal(c.names(), []string{"h100-nvl", "h200"}) {
		t.Errorf("names %v", c.names())
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := fs.ReadFile(deviceFiles, name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A record that lacks a figure or a source, names an unknown key or
// repeats an alias is refused, naming what to fix.
func TestBadDeviceRecords(t *testing.T) {
	h100 := string(mustRead(t, "devices/h100.yaml"))
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"no figure", "sms: 132\n", "", "sms is 0: want a positive figure"},
		{"no source", "  sms: ", "  smz: ", `no source for sms`},
		{"unknown key", "sms: 132\n", "sms: 132\nclock_mhz: 1980\n", "field clock_mhz not found"},
		{"unknown source", "  sms: ", "  clock: \"x\"\n  sms: ", `sources names "clock"`},
		{"bad arch", "arch: hopper", "arch: rubin", `arch "rubin": want hopper`},
		{"bad tuned file", `added: "20`, `added: "Oct 20`, "want E, N > 0"},
		{"name not the file's", "name: h100\n", "name: h101\n", `name "h101", want the file's name "h100"`},
	} {
		rec := strings.Replace(h100, tc.from, tc.to, 1)
		if rec == h100 {
			t.Fatalf("%s: %q not in the record", tc.name, tc.from)
		}
		_, err := readDeviceCatalog(fstest.MapFS{"d/h100.yaml": {Data: []byte(rec)}}, "d")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "d/h100.yaml") {
			t.Errorf("%s: error %v, want one naming d/h100.yaml and %q", tc.name, err, tc.want)
		}
	}
	dup := fstest.MapFS{"d/h100.yaml": {Data: []byte(h100)}, "d/h800.yaml": {Data: mustRead(t, "devices/h800.yaml")}}
	dup["d/h800.yaml"].Data = []byte(strings.Replace(string(dup["d/h800.yaml"].Data), "aliases: [", `aliases: ["h100-sxm", `, 1))
	if _, err := readDeviceCatalog(dup, "d"); err == nil || !strings.Contains(err.Error(), `alias "h100-sxm" is also`) {
		t.Errorf("duplicate alias: %v", err)
	}
}
