package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/batchjob"
	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/collect"
	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

// namedValues are the flags whose value must be one of a known set of
// names (a catalog device or model, a router, an execution mode): a value
// outside it is a usage error (exit 2) when the flags are parsed, naming
// the flag and the names it takes, the same in every command. A flag that
// takes a free label under the same name (ingest --device) sets its own
// Validator, which applyFlagRules leaves alone.
var namedValues = map[string]func(string) error{
	"device": func(v string) error {
		if _, err := spec.LookupDevice(v); err != nil {
			return fmt.Errorf("want a catalog device (see 'ftk devices list'): %s", strings.Join(spec.DeviceNames(), ", "))
		}
		return nil
	},
	// A model is a catalog name or a config.json path; a path that cannot
	// be read is an input error reported by the command (exit 1).
	"model": func(v string) error {
		if _, err := spec.LookupModel(v); errors.Is(err, spec.ErrUnknownModel) {
			return fmt.Errorf("want a catalog model (see 'ftk models list') or a config.json path")
		}
		return nil
	},
	"router":          oneOf(runresult.RouterRoundRobin, runresult.RouterLeastLoaded),
	"mode":            oneOf(runresult.ModeColocated, runresult.ModeDisaggregated),
	"execution-mode":  oneOf(runresult.ExecutionModes...),
	"moe-routing":     oneOf(runresult.RoutingSkewed, runresult.RoutingUniform, runresult.RoutingReplay, runresult.RoutingEven),
	"all2all-backend": oneOf(spec.All2AllBackends()...),
	"backend":         oneOf(collect.BackendAuto, collect.BackendSynthetic, collect.BackendTorch),
	"device-kind":     oneOf(collect.KindCUDA, collect.KindCPU),
	"kernels":         oneOf(collect.KernelsAuto, collect.KernelsVLLM, collect.KernelsCompiled, collect.KernelsEager),
	"emit":            oneOf(batchjob.Slurm, batchjob.K8s),
	"repeats":         oneOf(bundle.RepeatsAll, bundle.RepeatsMedian), // fit's (collect's --repeats is a count)
	"workload":        checkWorkloadName,
	"stages": func(v string) error {
		if _, err := datasets.ParseStages(v); err != nil {
			return wantOf(err)
		}
		return nil
	},
	"measurement": func(v string) error {
		return oneOf(spec.CUDAEvent, spec.KernelOnly, spec.HostWall, spec.CPUTime)(strings.ToUpper(v))
	},
	"kv-cache-dtype": func(v string) error {
		if _, err := spec.KVCacheBytes(v); err != nil {
			return fmt.Errorf("want auto, bfloat16, fp8, fp8_e4m3 or fp8_e5m2")
		}
		return nil
	},
}

// checkWorkloadName checks a workload's form without reading a file: a
// trace that cannot be read is an input error (exit 1) reported when the
// command opens it.
func checkWorkloadName(v string) error {
	want := fmt.Errorf("want fixed:PxO, %s, trace:PATH, shared-prefix:... or sessions:...", strings.Join(datasets.BuiltinNames(), ", "))
	switch {
	case strings.HasPrefix(v, "trace:"):
		if strings.TrimPrefix(v, "trace:") == "" {
			return want
		}
		return nil
	case strings.HasPrefix(v, "fixed:"), strings.HasPrefix(v, "shared-prefix:"), strings.HasPrefix(v, "sessions:"):
		if _, err := datasets.ParseWorkload(v); err != nil {
			return wantOf(err)
		}
		return nil
	case slices.Contains(datasets.BuiltinNames(), v):
		return nil
	}
	return want
}

// wantOf keeps what a parser's error says it wants (the text after its
// last "want "): the flag error names the flag and the value given.
func wantOf(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, "want "); i >= 0 {
		return errors.New(msg[i:])
	}
	return err
}

// oneOf accepts exactly the names given.
func oneOf(names ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(names, v) {
			return nil
		}
		return fmt.Errorf("want %s", orList(names))
	}
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// applyNamedValue gives a string flag of namedValues its check.
func applyNamedValue(f *cli.StringFlag) {
	if check, ok := namedValues[f.Name]; ok && f.Validator == nil {
		f.Validator = check
	}
}

// freeLabel is the Validator of a flag that takes any non-empty name
// under a name of namedValues (ingest --device labels inputs with devices
// outside the catalog too).
func freeLabel(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("want a non-empty name")
	}
	return nil
}

// engineLimitFlags are the engine-limit flags of collect, fit and
// simulate, declared here once with spec's defaults (spec.EngineLimits);
// purpose prefixes their usage ("coverage: " in fit).
func engineLimitFlags(purpose string) []cli.Flag {
	def := spec.DefaultEngineLimits()
	return []cli.Flag{
		&cli.IntFlag{Name: "max-num-batched-tokens", Value: def.MaxNumBatchedTokens, Usage: purpose + "token budget of one engine step"},
		&cli.IntFlag{Name: "max-num-seqs", Value: def.MaxNumSeqs, Usage: purpose + "most sequences running at once per replica"},
		&cli.IntFlag{Name: "max-model-len", Usage: purpose + fmt.Sprintf("longest request (prompt + output); longer ones are rejected (0: min(model's maximum, %d))", spec.DefaultMaxModelLen)},
		&cli.IntFlag{Name: "block-size", Value: def.BlockSize, Usage: purpose + "tokens per KV-cache block (the page size of paged attention)"},
	}
}

// setEngineLimits overrides the limits of lim that the command line sets.
func setEngineLimits(cmd *cli.Command, lim *spec.EngineLimits) {
	for name, v := range map[string]*int{
		"max-num-batched-tokens": &lim.MaxNumBatchedTokens, "max-num-seqs": &lim.MaxNumSeqs,
		"max-model-len": &lim.MaxModelLen, "block-size": &lim.BlockSize,
	} {
		if cmd.IsSet(name) {
			*v = cmd.Int(name)
		}
	}
}

// resolveEngineLimits is the engine limits of the command line (spec's
// defaults where a flag is not given) resolved for model m; a limit that
// spec.EngineLimits.Resolve refuses is a usage error.
func resolveEngineLimits(cmd *cli.Command, m *spec.Model) (spec.EngineLimits, error) {
	lim := spec.DefaultEngineLimits()
	setEngineLimits(cmd, &lim)
	lim, err := lim.Resolve(m)
	if err != nil {
		return lim, usageError("%s: %v", cmd.Name, err)
	}
	return lim, nil
}
