package runresult

import (
	"fmt"
	"strconv"
	"strings"
)

// VLLMDefault is one engine default that changed between vLLM releases:
// the value each release range takes, with its source.
type VLLMDefault struct {
	Setting string
	Since   string // first release with Value ("" : every release before the next row)
	Value   string
	Source  string
}

// VLLMDefaults lists the engine defaults simulate --vllm-version sets, per
// release, oldest first within a setting. Settings whose default has not
// changed within the releases ftk simulates (max_cudagraph_capture_size:
// min(2 x max_num_seqs, 512); prefix caching on; all2all_backend
// allgather_reducescatter, named the default when vllm-project/vllm#33728
// removed the naive backend) are ftk's defaults for every version.
var VLLMDefaults = []VLLMDefault{
	{"execution_mode", "", ExecPiecewise,
		"V1 captures piecewise CUDA graphs between attention ops (vLLM docs, design/torch_compile.md; vllm-project/vllm#14437)"},
	{"execution_mode", "0.11.0", ExecFullAndPiecewise,
		"cudagraph_mode FULL_AND_PIECEWISE by default (vllm-project/vllm#25444, merged 2025-09, first in v0.11.0)"},
	{"async_scheduling", "", "false", "async scheduling opt-in (--async-scheduling) before v0.14.0"},
	{"async_scheduling", "0.14.0", "true",
		"async scheduling on unless an option is incompatible (vllm-project/vllm#27614, the last item of the plan #27679; on by default in v0.14.0); " +
			"vLLM 0.14 turns it off with pipeline parallelism, and so does ftk for PP > 1"},
}

// versionParts parses a vLLM version (0.14.0, v0.14.1, 0.11.0rc2: the
// numeric prefix of each dotted part).
func versionParts(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return out, fmt.Errorf("vllm_version %q: want MAJOR.MINOR[.PATCH], e.g. 0.14.0", v)
	}
	for i, p := range parts {
		n := 0
		for n < len(p) && p[n] >= '0' && p[n] <= '9' {
			n++
		}
		x, err := strconv.Atoi(p[:n])
		if err != nil {
			return out, fmt.Errorf("vllm_version %q: want MAJOR.MINOR[.PATCH], e.g. 0.14.0", v)
		}
		out[i] = x
	}
	return out, nil
}

// versionAtLeast reports whether v is release since or later.
func versionAtLeast(v, since [3]int) bool {
	for i := range v {
		if v[i] != since[i] {
			return v[i] > since[i]
		}
	}
	return true
}

// VLLMDefaultsFor returns the value of each setting of VLLMDefaults for
// release v.
func VLLMDefaultsFor(v string) (map[string]VLLMDefault, error) {
	pv, err := versionParts(v)
	if err != nil {
		return nil, err
	}
	out := map[string]VLLMDefault{}
	for _, d := range VLLMDefaults {
		if d.Since != "" {
			ps, err := versionParts(d.Since)
			if err != nil {
				return nil, err
			}
			if !versionAtLeast(pv, ps) {
				continue
			}
		}
		out[d.Setting] = d
	}
	return out, nil
}

// ApplyVLLMDefaults sets the engine defaults of release c.VLLMVersion
// (VLLMDefaults) on the settings the user did not give: the execution
// mode unless keepExec, async scheduling unless keepAsync (and never with
// PP > 1). A config.yaml records the resolved settings, so a rerun from it
// does not apply them again.
func (c *Config) ApplyVLLMDefaults(keepExec, keepAsync bool) error {
	if c.VLLMVersion == "" {
		return nil
	}
	d, err := VLLMDefaultsFor(c.VLLMVersion)
	if err != nil {
		return err
	}
	if !keepExec {
		c.Engine.ExecutionMode = d["execution_mode"].Value
	}
	if !keepAsync {
		c.Engine.AsyncScheduling = d["async_scheduling"].Value == "true" && c.Layout.PP <= 1
	}
	return nil
}
