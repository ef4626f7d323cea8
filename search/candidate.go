package search

import (
	"fmt"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/spec"
)

// Candidate is one deployment: a device, a layout (replicas of one engine,
// or prefill and decode instances), engine limits and an execution mode.
type Candidate struct {
	Device string `json:"device"`
	Mode   string `json:"mode"` // runresult.ModeColocated or ModeDisaggregated
	// Layout is a co-located replica's TP/PP/EP; DP is the number of
	// replicas.
	Layout spec.Layout `json:"layout,omitzero"`
	// Prefill and Decode are a disaggregated deployment's instance layouts
	// (DP 1), with their instance counts.
	Prefill          spec.Layout `json:"prefill,omitzero"`
	Decode           spec.Layout `json:"decode,omitzero"`
	PrefillInstances int         `json:"prefill_instances,omitempty"`
	DecodeInstances  int         `json:"decode_instances,omitempty"`

	MaxNumSeqs          int    `json:"max_num_seqs"`
	MaxNumBatchedTokens int    `json:"max_num_batched_tokens"`
	ExecutionMode       string `json:"execution_mode"`
}

// GPUs is the number of GPUs the deployment uses.
func (c Candidate) GPUs() int {
	if c.Mode == runresult.ModeDisaggregated {
		return c.PrefillInstances*c.Prefill.GPUs() + c.DecodeInstances*c.Decode.GPUs()
	}
	return c.Layout.GPUs()
}

// ID names the candidate uniquely, in characters safe for a file name.
func (c Candidate) ID() string {
	lim := fmt.Sprintf("s%d-b%d-%s", c.MaxNumSeqs, c.MaxNumBatchedTokens, c.ExecutionMode)
	if c.Mode == runresult.ModeDisaggregated {
		return fmt.Sprintf("%s-%dp-%s-%dd-%s-%s", c.Device, c.PrefillInstances, layoutID(c.Prefill), c.DecodeInstances, layoutID(c.Decode), lim)
	}
	return fmt.Sprintf("%s-%s-dp%d-%s", c.Device, layoutID(c.Layout), c.Layout.DP, lim)
}

func layoutID(l spec.Layout) string {
	l = l.Normalize()
	return fmt.Sprintf("tp%dpp%dep%d", l.TP, l.PP, l.EP)
}

// Describe is the deployment in words, for the table.
func (c Candidate) Describe() string {
	if c.Mode == runresult.ModeDisaggregated {
		return fmt.Sprintf("%dx prefill %s + %dx decode %s", c.PrefillInstances, short(c.Prefill), c.DecodeInstances, short(c.Decode))
	}
	return fmt.Sprintf("%dx %s", c.Layout.DP, short(c.Layout))
}

func short(l spec.Layout) string {
	l = l.Normalize()
	s := fmt.Sprintf("TP%d", l.TP)
	if l.PP > 1 {
		s += fmt.Sprintf(" PP%d", l.PP)
	}
	if l.EP > 1 {
		s += fmt.Sprintf(" EP%d", l.EP)
	}
	return s
}

// Config is the simulation of the candidate: base with the candidate's
// device, layout, mode, limits and execution mode.
func (c Candidate) Config(base runresult.Config) runresult.Config {
	cfg := base
	cfg.Device = c.Device
	cfg.Mode = c.Mode
	cfg.Engine.MaxNumSeqs = c.MaxNumSeqs
	cfg.Engine.MaxNumBatchedTokens = c.MaxNumBatchedTokens
	cfg.Engine.ExecutionMode = c.ExecutionMode
	if c.Mode == runresult.ModeDisaggregated {
		cfg.Layout = c.Prefill
		cfg.Disaggregation.PrefillLayout, cfg.Disaggregation.DecodeLayout = c.Prefill, c.Decode
		cfg.Disaggregation.PrefillInstances, cfg.Disaggregation.DecodeInstances = c.PrefillInstances, c.DecodeInstances
	} else {
		cfg.Layout = c.Layout
		cfg.Disaggregation = runresult.DisaggregationConfig{}
	}
	return cfg
}
