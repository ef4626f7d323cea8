package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/datasets"

	"github.com/urfave/cli/v3"
)

// atLeastOne are the flags whose value counts something that cannot be
// zero or negative (a parallel degree, trees, folds, instances, limits):
// given on the command line as 0 or below they are a usage error instead
// of quietly becoming 1 or a default. The same name means the same thing
// in every command.
var atLeastOne = map[string]bool{
	"tp": true, "pp": true, "ep": true, "dp": true,
	"prefill-tp": true, "prefill-pp": true, "prefill-ep": true,
	"decode-tp": true, "decode-pp": true, "decode-ep": true,
	"prefill-instances": true, "decode-instances": true,
	"trees": true, "folds": true, "repeats": true, "shards": true, "gpus": true,
	"max-num-batched-tokens": true, "max-num-seqs": true, "block-size": true,
	"max-evaluations": true, "max-failures": true,
}

// atLeastZero are the count flags where 0 means "derived" or "all" and a
// negative value is a usage error.
var atLeastZero = map[string]bool{
	"num-requests": true, "clients": true, "max-model-len": true, "num-gpu-blocks-override": true,
	"long-prefill-token-threshold": true, "max-cudagraph-capture-size": true,
}

// numberRules are the range of each number flag that has one: a value
// outside it is a usage error (exit 2), not a failed run.
var numberRules = map[string]func(float64) error{
	"rate": func(v float64) error {
		if v != 0 && !math.IsInf(v, 1) && !(v >= datasets.MinRatePerS && v <= 1e9) {
			return fmt.Errorf("want requests/s from %g to 1e9 (inf: every request at once, as vLLM's --request-rate inf; 0 where allowed), got %g", datasets.MinRatePerS, v)
		}
		return nil
	},
	"gpu-memory-utilization": func(v float64) error {
		if !(v > 0 && v <= 1) {
			return fmt.Errorf("want a share of GPU memory above 0, at most 1, got %g", v)
		}
		return nil
	},
	"think-time":         nonNegative("seconds"),
	"kv-offloading-size": nonNegative("GiB"),
	"kv-link-latency-us": nonNegative("microseconds"),
	"moe-skew":           nonNegative("a Zipf exponent"),
	"cv":                 nonNegative("a coefficient of variation"),
	"kv-link-gbps": func(v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("want a bandwidth above 0 GB/s, got %g", v)
		}
		return nil
	},
}

// nonNegative is the rule of a finite number >= 0 of unit.
func nonNegative(unit string) func(float64) error {
	return func(v float64) error {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("want %s: a finite number >= 0, got %g", unit, v)
		}
		return nil
	}
}

// applyFlagRules gives every flag of cmd the shared rules: counts of
// atLeastOne refuse values below 1, names of namedValues refuse names
// outside their set, and a flag whose usage text states its
// own default (because 0 means "derived") does not print the library's
// "(default: 0)" beside it.
func applyFlagRules(cmd *cli.Command) {
	for _, f := range cmd.Flags {
		switch f := f.(type) {
		case *cli.IntFlag:
			if atLeastOne[f.Name] && f.Validator == nil {
				f.Validator = func(v int) error { return atLeastOneErr(v) }
			}
			if atLeastZero[f.Name] && f.Validator == nil {
				f.Validator = func(v int) error {
					if v < 0 {
						return fmt.Errorf("want 0 or more, got %d", v)
					}
					return nil
				}
			}
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.IntSliceFlag:
			if atLeastOne[f.Name] && f.Validator == nil {
				f.Validator = func(vs []int) error {
					for _, v := range vs {
						if err := atLeastOneErr(v); err != nil {
							return err
						}
					}
					return nil
				}
			}
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.FloatFlag:
			if rule := numberRules[f.Name]; rule != nil && f.Validator == nil {
				f.Validator = rule
			}
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.Uint64Flag:
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.StringFlag:
			applyNamedValue(f)
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.StringSliceFlag:
			hideOwnDefault(&f.HideDefault, f.Usage)
		case *cli.DurationFlag:
			hideOwnDefault(&f.HideDefault, f.Usage)
		}
	}
}

func atLeastOneErr(v int) error {
	if v < 1 {
		return fmt.Errorf("want 1 or more, got %d", v)
	}
	return nil
}

// hideOwnDefault hides the library's default when the usage text says
// what the default is ("(default 1)", "(0: the whole trace)", "default:").
func hideOwnDefault(hide *bool, usage string) {
	if strings.Contains(usage, "(default") || strings.Contains(usage, "default:") || strings.Contains(usage, "(0:") {
		*hide = true
	}
}
