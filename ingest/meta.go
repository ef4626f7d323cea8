package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
	"go.yaml.in/yaml/v3"
)

// CollectFile is the YAML that ftk collect writes beside its CSV files. Its
// keys: device, model, measurement (one type or a list: the measurement
// types of the CSV files beside it), backend, shard ("i/n", 1-based) and
// optionally sweep (an identifier shared by the shards of one sweep).
const CollectFile = "ftk-collect.yaml"

// origin is where an input's device and model come from.
type origin struct {
	device, deviceFrom string
	model, modelFrom   string
	modelFixed         bool // from a flag or ftk-collect.yaml: overrides row model names
	measurements       []string
	collectPath        string
	collect            *collectMeta
	measurement        string // Options.Measurement
}

// collectMeta is a parsed ftk-collect.yaml.
type collectMeta struct {
	path                          string
	device, model, backend, sweep string
	// status is collect's: "complete", or "incomplete" when the sweep was
	// interrupted or shapes failed (failed of them).
	status         string
	failed         int
	measurements   []string
	shardI, shardN int
	limits         *spec.EngineLimits // engine_limits, nil when absent
}

// dirMeta is what the YAML files of one folder say.
type dirMeta struct {
	device, devicePath string
	collect            *collectMeta
}

// resolver finds the device and model of input files, reading each
// folder's YAML files once.
type resolver struct {
	opt  Options
	dirs map[string]*dirMeta
}

func newResolver(opt Options) *resolver { return &resolver{opt: opt, dirs: map[string]*dirMeta{}} }

// resolve returns the origin of the file at path (as given). Device:
// --device, else ftk-collect.yaml (in the file's folder or the one above),
// else a YAML with a device: key in the file's folder or the folder above,
// else a device name in the path. Model: --model, else ftk-collect.yaml,
// else the path (the deepest folder named after a catalog model, or the
// folder below the device's).
func (r *resolver) resolve(path string) (origin, error) {
	o := origin{measurement: r.opt.Measurement}
	abs, err := filepath.Abs(path)
	if err != nil {
		return o, err
	}
	dir := filepath.Dir(path) // YAML paths are shown relative to the input as given
	dm, err := r.dir(dir)
	if err != nil {
		return o, err
	}
	pm, err := r.dir(filepath.Join(dir, ".."))
	if err != nil {
		return o, err
	}
	pathDevice, pathModel := fromPath(filepath.Dir(abs))
	c := dm.collect
	if c == nil {
		c = pm.collect // collect writes network/*.csv one folder down
	}
	if c != nil {
		o.collect, o.collectPath, o.measurements = c, c.path, c.measurements
	}
	switch {
	case r.opt.Device != "":
		o.device, o.deviceFrom = r.opt.Device, "flag --device"
	case c != nil && c.device != "":
		o.device, o.deviceFrom = c.device, c.path
	case dm.device != "":
		o.device, o.deviceFrom = dm.device, dm.devicePath
	case pm.device != "":
		o.device, o.deviceFrom = pm.device, pm.devicePath
	case pathDevice != "":
		o.device, o.deviceFrom = pathDevice, "path"
	}
	if o.device != "" {
		if d, err := spec.LookupDevice(o.device); err == nil {
			o.device = d.Name
		}
	}
	switch {
	case r.opt.Model != "":
		o.model, o.modelFrom, o.modelFixed = canonicalModel(r.opt.Model), "flag --model", true
	case c != nil && c.model != "":
		o.model, o.modelFrom, o.modelFixed = canonicalModel(c.model), c.path, true
	case pathModel != "":
		o.model, o.modelFrom = canonicalModel(pathModel), "path"
	}
	return o, nil
}

// canonicalDevice returns the catalog name of a device, or the name as
// given.
func canonicalDevice(name string) string {
	if d, err := spec.LookupDevice(name); err == nil {
		return d.Name
	}
	return name
}

// canonicalModel returns the catalog name of a model (also for a Hugging
// Face id such as meta-llama/Llama-3.1-8B-Instruct), or the name as given.
func canonicalModel(name string) string {
	if n, ok := spec.CanonicalModelName(name); ok {
		return n
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		if n, ok := spec.CanonicalModelName(name[i+1:]); ok {
			return n
		}
	}
	return name
}

// dir reads the YAML files of one folder (cached by absolute path).
func (r *resolver) dir(dir string) (*dirMeta, error) {
	key, err := filepath.Abs(dir)
	if err != nil {
		key = dir
	}
	if m, ok := r.dirs[key]; ok {
		return m, nil
	}
	m := &dirMeta{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		r.dirs[key] = m
		return m, nil // an unreadable parent folder says nothing
	}
	for _, e := range entries {
		name := e.Name()
		ext := strings.ToLower(filepath.Ext(name))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		var doc map[string]any
		perr := yaml.Unmarshal(data, &doc)
		if name == CollectFile {
			if perr != nil {
				return nil, fmt.Errorf("%s: %w", p, perr)
			}
			c, err := parseCollect(p, doc)
			if err != nil {
				return nil, err
			}
			m.collect = c
			continue
		}
		if perr != nil {
			continue // not a mapping: says nothing about the device
		}
		d, ok := doc["device"].(string)
		if !ok || strings.TrimSpace(d) == "" {
			continue
		}
		d = strings.TrimSpace(d)
		if m.device != "" && !sameDevice(m.device, d) {
			return nil, fmt.Errorf("%s says device %q but %s says %q", m.devicePath, m.device, p, d)
		}
		if m.device == "" {
			m.device, m.devicePath = d, p
		}
	}
	r.dirs[key] = m
	return m, nil
}

func sameDevice(a, b string) bool {
	da, ea := spec.LookupDevice(a)
	db, eb := spec.LookupDevice(b)
	if ea == nil && eb == nil {
		return da.Name == db.Name
	}
	return strings.EqualFold(a, b)
}

// parseCollect reads the keys of an ftk-collect.yaml.
func parseCollect(path string, doc map[string]any) (*collectMeta, error) {
	c := &collectMeta{path: path}
	str := func(k string) string {
		if v, ok := doc[k]; ok && v != nil {
			return strings.TrimSpace(fmt.Sprint(v))
		}
		return ""
	}
	c.device, c.model, c.backend, c.sweep = str("device"), str("model"), str("backend"), str("sweep")
	c.status = str("status")
	if f, ok := doc["failed"].(int); ok {
		c.failed = f
	}
	for _, k := range []string{"measurement", "measurement_type"} {
		switch v := doc[k].(type) {
		case string:
			c.measurements = append(c.measurements, strings.TrimSpace(v))
		case []any:
			for _, x := range v {
				c.measurements = append(c.measurements, strings.TrimSpace(fmt.Sprint(x)))
			}
		}
	}
	sort.Strings(c.measurements)
	var err error
	if c.limits, err = parseLimits(path, doc["engine_limits"]); err != nil {
		return nil, err
	}
	if s := str("shard"); s != "" {
		i, n, ok := strings.Cut(s, "/")
		a, e1 := strconv.Atoi(strings.TrimSpace(i))
		b, e2 := strconv.Atoi(strings.TrimSpace(n))
		if !ok || e1 != nil || e2 != nil || b < 1 || a < 1 || a > b {
			return nil, fmt.Errorf("%s: shard %q is not i/n with 1 <= i <= n", path, s)
		}
		c.shardI, c.shardN = a, b
	}
	return c, nil
}

// checkShards refuses to merge shards of one sweep (the ftk-collect.yaml
// files with a shard and the same sweep identifier) that disagree on
// device, model, measurement types, backend or shard count, or that repeat
// a shard.
func checkShards(cs []*collectMeta) error {
	first := map[string]*collectMeta{}
	seen := map[string]string{}
	for _, c := range cs {
		if c.shardN == 0 {
			continue
		}
		f, ok := first[c.sweep]
		if !ok {
			first[c.sweep] = c
			f = c
		}
		for _, d := range [][3]string{
			{"device", f.device, c.device},
			{"model", f.model, c.model},
			{"measurement", strings.Join(f.measurements, ","), strings.Join(c.measurements, ",")},
			{"backend", f.backend, c.backend},
			{"shard count", strconv.Itoa(f.shardN), strconv.Itoa(c.shardN)},
		} {
			if d[1] != d[2] {
				return fmt.Errorf("shards of one sweep disagree on %s: %s says %q, %s says %q", d[0], f.path, d[1], c.path, d[2])
			}
		}
		k := fmt.Sprintf("%s %d", c.sweep, c.shardI)
		if p, dup := seen[k]; dup {
			return fmt.Errorf("shard %d/%d appears twice: %s and %s", c.shardI, c.shardN, p, c.path)
		}
		seen[k] = c.path
	}
	return nil
}

// fromPath finds a catalog device name among the path's folder names
// (split at - _ . and spaces), deepest first, and a model: the deepest
// folder below the device's named after a catalog model, else the rest of
// the device's folder name when that is a catalog model (frontier-a800-
// qwen3-30b-a3b), else the folder just below the device's.
func fromPath(dir string) (device, model string) {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	devIdx, rest := -1, ""
	for i := len(parts) - 1; i >= 0 && devIdx < 0; i-- {
		p := parts[i]
		start := 0
		for j := 0; j <= len(p); j++ {
			if j < len(p) && !strings.ContainsRune("-_. ", rune(p[j])) {
				continue
			}
			if j > start {
				if d, err := spec.LookupDevice(p[start:j]); err == nil {
					device, devIdx = d.Name, i
					if j < len(p) {
						rest = p[j+1:]
					}
					break
				}
			}
			start = j + 1
		}
	}
	for i := len(parts) - 1; i > devIdx; i-- {
		if _, ok := spec.CanonicalModelName(parts[i]); ok {
			return device, parts[i]
		}
	}
	if devIdx < 0 {
		return "", ""
	}
	if _, ok := spec.CanonicalModelName(rest); ok && rest != "" {
		return device, rest
	}
	if devIdx+1 < len(parts) {
		return device, parts[devIdx+1]
	}
	return device, ""
}
