package runresult

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Serving modes (Config.Mode).
const (
	ModeColocated     = "colocated"
	ModeDisaggregated = "disaggregated"
)

// Defaults of the KV link.
const (
	// defaultKVLinkGBpsPerGPU is one 400 Gb/s RDMA NIC per GPU (50 GB/s),
	// as DGX H100 / HGX systems have, the path NIXL and similar KV
	// connectors use between nodes.
	defaultKVLinkGBpsPerGPU = 50
	// defaultKVLinkLatencyUs is the set-up of one transfer: the decode
	// instance learning of the finished prefill and issuing its reads.
	defaultKVLinkLatencyUs = 50
)

// DisaggregationConfig lays out a disaggregated deployment: prefill
// instances run prompts, then hand each request's KV cache over a link to
// a decode instance, which generates its output tokens (docs/design.md section 3).
type DisaggregationConfig struct {
	PrefillInstances int `json:"prefill_instances" yaml:"prefill_instances"`
	DecodeInstances  int `json:"decode_instances" yaml:"decode_instances"`
	// PrefillLayout and DecodeLayout are each instance's parallel layout
	// (DP must be 1: instances replace data parallelism); zero means
	// Config.Layout.
	PrefillLayout spec.Layout `json:"prefill_layout" yaml:"prefill_layout"`
	DecodeLayout  spec.Layout `json:"decode_layout" yaml:"decode_layout"`
	// KVLinkGBps is the bandwidth of each prefill instance's KV link in
	// GB/s (1e9 bytes/s); 0 means 50 GB/s per GPU of a prefill instance.
	KVLinkGBps float64 `json:"kv_link_gbps" yaml:"kv_link_gbps"`
	// KVLinkLatencyUs is the fixed cost of one transfer, microseconds (0:
	// 50 us; negative is invalid).
	KVLinkLatencyUs float64 `json:"kv_link_latency_us" yaml:"kv_link_latency_us"`
}

func (d *DisaggregationConfig) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("simulate config: disaggregation: "+format, a...)
	}
	switch {
	case d.PrefillInstances < 0 || d.DecodeInstances < 0:
		return bad("prefill_instances (%d) and decode_instances (%d) must not be negative", d.PrefillInstances, d.DecodeInstances)
	case d.KVLinkGBps < 0 || math.IsNaN(d.KVLinkGBps) || math.IsInf(d.KVLinkGBps, 0):
		return bad("kv_link_gbps must be a positive bandwidth, got %g", d.KVLinkGBps)
	case d.KVLinkLatencyUs < 0 || math.IsNaN(d.KVLinkLatencyUs) || math.IsInf(d.KVLinkLatencyUs, 0):
		return bad("kv_link_latency_us must not be negative, got %g", d.KVLinkLatencyUs)
	}
	return nil
}

// Resolve fills in defaults from the run's layout.
func (d *DisaggregationConfig) Resolve(l spec.Layout) {
	if d.PrefillInstances == 0 {
		d.PrefillInstances = 1
	}
	if d.DecodeInstances == 0 {
		d.DecodeInstances = 1
	}
	if d.PrefillLayout == (spec.Layout{}) {
		d.PrefillLayout = l
	}
	if d.DecodeLayout == (spec.Layout{}) {
		d.DecodeLayout = l
	}
	d.PrefillLayout, d.DecodeLayout = d.PrefillLayout.Normalize(), d.DecodeLayout.Normalize()
	if d.KVLinkGBps == 0 {
		d.KVLinkGBps = defaultKVLinkGBpsPerGPU * float64(d.PrefillLayout.TP*d.PrefillLayout.PP)
	}
	if d.KVLinkLatencyUs == 0 {
		d.KVLinkLatencyUs = defaultKVLinkLatencyUs
	}
}
