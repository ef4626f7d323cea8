package simulate

import (
	"fmt"
	"sync/atomic"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// A simulation's settings pass through one pipeline (docs/design.md,
// section 9): runresult.DefaultConfig, then a config file
// (runresult.LoadConfig), then the command line's flags, then Resolve,
// the one step that checks every setting and fills in every default. Its
// result, a Resolved, is frozen; New builds simulations from it.

// Resolved is a simulation's configuration after Resolve: every setting
// checked, alone (runresult.Config.Validate) and against the model and
// the device, and every default filled in (max_model_len, mode, layouts,
// MoE routing, disaggregated instances, execution mode), with the bundles
// it names loaded. Nothing changes it after Resolve, so one Resolved
// builds any number of simulations.
type Resolved struct {
	cfg   runresult.Config
	model *spec.Model
	// roles are the kinds of engine of the run: one (replicas or the
	// lockstep DP ranks), or the prefill then the decode instances.
	roles []role
	// engines lists every engine of a run in order (replicas, or prefill
	// then decode instances); the first entry of them receive arrivals.
	engines []enginePlan
	entry   int
	// lockstep: the engines are the DP ranks of an MoE model, stepped
	// together.
	lockstep bool
	// spec is the run's speculative decoding (nil: none) and drafter its
	// drafter.
	spec    *spec.Speculative
	drafter spec.Drafter
	// spare holds the cost models Resolve built to check the roles, one
	// per role, for the first New to take (a cost model keeps per-run
	// state, so later simulations build their own): building them twice
	// would add about 1 ms to every simulate.New.
	spare atomic.Pointer[[]*cost.OpCostModel]
}

// role is one kind of engine of a run: its layout, memory plan and the
// settings of its cost model.
type role struct {
	layout spec.Layout
	memory runresult.MemoryReport
	cost   cost.OpCostConfig
}

// The lockstep DP ranks price their steps together.
var _ LockstepCostModel = (*cost.OpCostModel)(nil)

// enginePlan is one engine of a run: its number, role name and the index
// of its role in Resolved.roles.
type enginePlan struct {
	id   int
	role string
	kind int
}

// Config is the configuration with every default resolved, as the run's
// summary.json and config.yaml record it.
func (r *Resolved) Config() runresult.Config { return r.cfg }

// Resolve checks cfg against its model and device and resolves its
// defaults. opts.Predictors and opts.HostPredictors, when set, replace the
// bundles cfg names (Resolve loads those otherwise), and the cost models
// take opts.RoutingTables; Resolve reads no other field of opts.
func Resolve(cfg runresult.Config, opts Options) (*Resolved, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := spec.LookupModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	if name, ok := spec.CanonicalModelName(cfg.Model); ok {
		cfg.Model = name // an alias or Hugging Face id is recorded as the catalog name
	}
	if m, err = m.WithKVCacheDtype(cfg.Engine.KVCacheDtype); err != nil {
		return nil, err
	}
	d, err := spec.LookupDevice(cfg.Device)
	if err != nil {
		return nil, err
	}
	if err := cfg.Layout.Validate(m); err != nil {
		return nil, err
	}
	l := cfg.Layout.Normalize()
	cfg.Layout = l
	if cfg.Mode == "" {
		cfg.Mode = runresult.ModeColocated
	}
	e := &cfg.Engine
	if e.EngineLimits, err = e.EngineLimits.Resolve(m); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if !e.EnableChunkedPrefill && e.MaxNumBatchedTokens < e.MaxModelLen {
		return nil, fmt.Errorf("simulate: without chunked prefill max_num_batched_tokens (%d) must be at least max_model_len (%d), as vLLM requires", e.MaxNumBatchedTokens, e.MaxModelLen)
	}
	r := &Resolved{model: m}
	if r.spec, err = resolveSpeculative(&cfg, m, l); err != nil {
		return nil, err
	}
	var dr *spec.Drafter
	if r.spec != nil {
		if r.drafter, err = r.spec.Drafter(m); err != nil {
			return nil, err
		}
		if dm := r.drafter.Model; dm != nil && r.spec.Method == spec.SpecDraftModel {
			if dm, err = dm.WithKVCacheDtype(e.KVCacheDtype); err != nil {
				return nil, err
			}
			if err := r.drafter.Layout(l).Validate(dm); err != nil {
				return nil, fmt.Errorf("speculative decoding draft model: %w", err)
			}
			r.drafter.Model = dm
		}
		dr = &r.drafter
	}
	preds, hostPreds := opts.Predictors, opts.HostPredictors
	if preds == nil && cfg.Bundle != "" {
		if preds, err = cost.LoadPredictors(cfg.Bundle, cfg.VLLMVersion, m, d); err != nil {
			return nil, err
		}
	}
	if hostPreds == nil && cfg.HostBundle != "" {
		if hostPreds, err = cost.LoadHostBundle(cfg.HostBundle, m, d); err != nil {
			return nil, err
		}
	}
	cfg.MoE.Resolve()
	var hist *cost.ExpertHistogram
	if m.IsMoE() && cfg.MoE.Routing == runresult.RoutingReplay {
		if hist, err = cost.ReadExpertHistogram(cfg.MoE.Histogram, m.NumExperts); err != nil {
			return nil, err
		}
	}
	// newRole checks one kind of engine and returns it with its execution
	// mode (which depends on the predictors: the cost model resolves it).
	var built []*cost.OpCostModel
	newRole := func(l spec.Layout) (role, string, error) {
		l = l.Normalize()
		if err := l.Validate(m); err != nil {
			return role{}, "", err
		}
		if l.DP > 1 && !m.IsMoE() {
			return role{}, "", fmt.Errorf("simulate: layout %s: an instance has DP=1; give the number of instances instead (--prefill-instances, --decode-instances)", l)
		}
		mem, err := planMemory(m, l, d, e, dr)
		if err != nil {
			return role{}, "", err
		}
		cc := cost.OpCostConfig{Model: m, Layout: l, Device: d, Limits: e.EngineLimits,
			Calibration: cfg.Calibration, Predictors: preds, BundleName: cfg.Bundle,
			HostPredictors: hostPreds, ExecutionMode: e.ExecutionMode, MaxCaptureSize: cost.MaxCaptureSizeSpec(e.MaxCUDAGraphCaptureSize, e.EngineLimits, specTokens(r.spec)),
			MoE: cfg.MoE, Histogram: hist, VLLMVersion: cfg.VLLMVersion, RoutingTables: opts.RoutingTables}
		cm, err := cost.NewOpCostModel(cc)
		if err != nil {
			return role{}, "", err
		}
		built = append(built, cm)
		return role{layout: l, memory: mem, cost: cc}, cm.ExecutionMode(), nil
	}
	if cfg.Mode == runresult.ModeDisaggregated {
		if l.DP > 1 {
			return nil, fmt.Errorf("simulate: disaggregated mode with DP=%d: give the instance counts instead (--prefill-instances, --decode-instances)", l.DP)
		}
		dc := &cfg.Disaggregation
		dc.Resolve(l)
		pre, exec, err := newRole(dc.PrefillLayout)
		if err != nil {
			return nil, fmt.Errorf("prefill instances: %w", err)
		}
		dec, _, err := newRole(dc.DecodeLayout)
		if err != nil {
			return nil, fmt.Errorf("decode instances: %w", err)
		}
		e.ExecutionMode = exec
		r.roles = []role{pre, dec}
		for i := 0; i < dc.PrefillInstances; i++ {
			r.engines = append(r.engines, enginePlan{id: i, role: RolePrefill, kind: 0})
		}
		for j := 0; j < dc.DecodeInstances; j++ {
			r.engines = append(r.engines, enginePlan{id: dc.PrefillInstances + j, role: RoleDecode, kind: 1})
		}
		r.entry = dc.PrefillInstances
	} else {
		if cfg.Disaggregation != (runresult.DisaggregationConfig{}) {
			return nil, fmt.Errorf("simulate config: disaggregation settings need mode %s", runresult.ModeDisaggregated)
		}
		// Data-parallel MoE ranks step in lockstep over one cost model of
		// the whole layout (lockstep.go); other replicas each have DP=1.
		one := l
		if r.lockstep = m.IsMoE() && l.DP > 1; r.lockstep {
			if err := checkLockstep(cfg, m, l); err != nil {
				return nil, err
			}
		} else {
			one.DP = 1
		}
		rep, exec, err := newRole(one)
		if err != nil {
			return nil, err
		}
		e.ExecutionMode = exec
		r.roles = []role{rep}
		for i := 0; i < l.DP; i++ {
			r.engines = append(r.engines, enginePlan{id: i, role: RoleReplica})
		}
		r.entry = l.DP
	}
	r.cfg = cfg
	r.spare.Store(&built)
	return r, nil
}

// resolveSpeculative resolves cfg's speculative decoding: none when K is 0
// (the run is then the run without it, byte for byte), else the
// configuration checked against the layout, with its acceptance taken
// from the built-in records (spec.LookupAcceptance) when not given, cut
// to K positions, and recorded in cfg so config.yaml reruns it.
func resolveSpeculative(cfg *runresult.Config, m *spec.Model, l spec.Layout) (*spec.Speculative, error) {
	sc := cfg.Engine.SpeculativeConfig
	if !sc.Enabled() {
		cfg.Engine.SpeculativeConfig = nil
		return nil, nil
	}
	s := *sc
	if l.PP > 1 {
		return nil, fmt.Errorf("simulate: speculative decoding with pipeline parallelism (PP=%d) is not simulated: vLLM V1 runs the drafter on the last stage and ftk does not model it there; use TP", l.PP)
	}
	k := s.NumSpeculativeTokens
	if len(s.Acceptance) == 0 {
		rec, err := spec.LookupAcceptance(s.Method, s.Dataset, m.Name, k)
		if err != nil {
			return nil, fmt.Errorf("simulate: speculative decoding %s: %w", s.Method, err)
		}
		s.Acceptance, s.AcceptanceRecord = rec.Acceptance, rec.Name
	}
	s.Acceptance = append([]float64(nil), s.Acceptance[:k]...)
	cfg.Engine.SpeculativeConfig = &s
	return &s, nil
}

// specTokens is K of s (0: none).
func specTokens(s *spec.Speculative) int {
	if s == nil {
		return 0
	}
	return s.NumSpeculativeTokens
}
