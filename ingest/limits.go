package ingest

import (
	"fmt"
	"slices"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
	"go.yaml.in/yaml/v3"
)

// measuredAt records what an input was measured at: the engine limits of
// its ftk-collect.yaml and the distinct block_size cells of its rows.
func measuredAt(in *dataset.Input, p *parsed, org origin) {
	if org.collect != nil && org.collect.limits != nil {
		lim := *org.collect.limits
		in.EngineLimits = &lim
	}
	col := -1
	for i, e := range familyExtras(p.family) {
		if e.src == profilecsv.ColBlockSize {
			col = i
		}
	}
	if col < 0 || p.nExtras == 0 || !p.xseen[col] {
		return
	}
	for i := col; i < len(p.ext); i += p.nExtras {
		if v := p.ext[i]; v.ok() {
			if b := int(v.num()); b > 0 && !slices.Contains(in.BlockSizes, b) {
				in.BlockSizes = append(in.BlockSizes, b)
			}
		}
	}
	slices.Sort(in.BlockSizes)
}

// parseLimits reads the engine_limits mapping of an ftk-collect.yaml (nil
// when it has none).
func parseLimits(path string, v any) (*spec.EngineLimits, error) {
	if v == nil {
		return nil, nil
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: engine_limits: %w", path, err)
	}
	var lim spec.EngineLimits
	if err := yaml.Unmarshal(data, &lim); err != nil {
		return nil, fmt.Errorf("%s: engine_limits: %w", path, err)
	}
	return &lim, nil
}
