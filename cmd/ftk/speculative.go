package main

import (
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

// speculativeFlags are simulate's speculative decoding flags, vLLM's
// --speculative-config and its keys one by one.
func speculativeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "speculative-config", Usage: `speculative decoding as vLLM's --speculative-config JSON: {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3} (keys method, num_speculative_tokens, model, prompt_lookup_max, prompt_lookup_min, draft_vocab_size; ftk's acceptance and dataset); the flags below override its keys`},
		&cli.StringFlag{Name: "speculative-method", Usage: "speculative decoding method, vLLM's names: eagle, eagle3, mtp (deepseek_mtp, qwen3_next_mtp, ... are mtp), draft_model or ngram", Validator: func(v string) error {
			_, err := spec.NormalizeSpecMethod(v)
			return err
		}},
		&cli.IntFlag{Name: "num-speculative-tokens", Usage: "draft tokens proposed per request and step (K; 0: no speculative decoding)"},
		&cli.StringFlag{Name: "speculative-model", Usage: "draft_model: the draft model (catalog name or config.json path); eagle, eagle3: the head's Hugging Face id (recorded; the head is priced from the target's shapes)"},
		&cli.StringFlag{Name: "speculative-acceptance", Usage: "per-position acceptance rates, one per draft position (e.g. 0.8,0.6,0.45), as vLLM reports them (drafts whose position i was accepted / drafts; non-increasing); default: the built-in record of the method (spec/speculative/)"},
		&cli.StringFlag{Name: "speculative-dataset", Usage: "pick the built-in acceptance record measured on this dataset (mt-bench, sharegpt, ...; default: the method's record for the model)"},
	}
}

// setSpeculative applies the speculative decoding flags to e: the JSON
// config first, then each flag given.
func setSpeculative(cmd *cli.Command, e *runresult.EngineConfig) error {
	names := []string{"speculative-config", "speculative-method", "num-speculative-tokens", "speculative-model", "speculative-acceptance", "speculative-dataset"}
	any := false
	for _, n := range names {
		any = any || cmd.IsSet(n)
	}
	if !any {
		return nil
	}
	var s spec.Speculative
	if e.SpeculativeConfig != nil {
		s = *e.SpeculativeConfig
	}
	if cmd.IsSet("speculative-config") {
		var err error
		if s, err = spec.ParseSpeculativeConfig(cmd.String("speculative-config")); err != nil {
			return usageError("simulate: %v", err)
		}
	}
	if cmd.IsSet("speculative-method") {
		s.Method = cmd.String("speculative-method")
		s.AcceptanceRecord = ""
	}
	if cmd.IsSet("num-speculative-tokens") {
		s.NumSpeculativeTokens = cmd.Int("num-speculative-tokens")
	}
	if cmd.IsSet("speculative-model") {
		s.Model = cmd.String("speculative-model")
	}
	if cmd.IsSet("speculative-dataset") {
		s.Dataset, s.Acceptance, s.AcceptanceRecord = cmd.String("speculative-dataset"), nil, ""
	}
	if cmd.IsSet("speculative-acceptance") {
		a, err := parseRates(cmd.String("speculative-acceptance"))
		if err != nil {
			return usageError("simulate: --speculative-acceptance: %v", err)
		}
		s.Acceptance, s.AcceptanceRecord = a, ""
	}
	if s.Method == "" && s.NumSpeculativeTokens > 0 {
		return usageError("simulate: --num-speculative-tokens %d needs a method: --speculative-method %s (or --speculative-config)", s.NumSpeculativeTokens, strings.Join(spec.SpecMethods, "|"))
	}
	if s.Method != "" && s.NumSpeculativeTokens == 0 && !cmd.IsSet("num-speculative-tokens") && (e.SpeculativeConfig == nil || e.SpeculativeConfig.NumSpeculativeTokens == 0) {
		return usageError("simulate: speculative method %s needs --num-speculative-tokens K (vLLM's num_speculative_tokens)", s.Method)
	}
	e.SpeculativeConfig = &s
	return nil
}

// parseRates reads a comma-separated list of numbers.
func parseRates(v string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
