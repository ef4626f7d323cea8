package main

import (
	"fmt"
	"strings"

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
