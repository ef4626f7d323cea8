package search

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Pool is the GPUs of one kind a deployment may use.
type Pool struct {
	Device string `json:"device"`
	GPUs   int    `json:"gpus"`
	// CostPerGPUHour is the price of one GPU for an hour (0: not given).
	CostPerGPUHour float64 `json:"cost_per_gpu_hour"`
}

// ParsePools reads "h100:8,h200:8" and the prices "h100=2.5,h200=3.1"
// (optional; when given, every pool needs one).
func ParsePools(gpus, costs string) ([]Pool, error) {
	var pools []Pool
	seen := map[string]bool{}
	for _, part := range strings.Split(gpus, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		dev, n, ok := strings.Cut(part, ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 1 {
			return nil, fmt.Errorf("--gpus %q: want DEVICE:COUNT, e.g. h100:8", part)
		}
		d, err := spec.LookupDevice(dev)
		if err != nil {
			return nil, fmt.Errorf("--gpus %q: %w", part, err)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("--gpus: %s given twice", d.Name)
		}
		seen[d.Name] = true
		pools = append(pools, Pool{Device: d.Name, GPUs: count})
	}
	if len(pools) == 0 {
		return nil, fmt.Errorf("--gpus %q: no GPUs; give e.g. h100:8", gpus)
	}
	if strings.TrimSpace(costs) == "" {
		return pools, nil
	}
	price := map[string]float64{}
	for _, part := range strings.Split(costs, ",") {
		dev, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("--cost-per-gpu-hour %q: want DEVICE=PRICE with a positive price, e.g. h100=2.5", part)
		}
		d, err := spec.LookupDevice(dev)
		if err != nil {
			return nil, fmt.Errorf("--cost-per-gpu-hour %q: %w", part, err)
		}
		price[d.Name] = f
	}
	for i := range pools {
		p, ok := price[pools[i].Device]
		if !ok {
			return nil, fmt.Errorf("--cost-per-gpu-hour has no price for %s: give one for every device of --gpus", pools[i].Device)
		}
		pools[i].CostPerGPUHour = p
		delete(price, pools[i].Device)
	}
	for d := range price {
		return nil, fmt.Errorf("--cost-per-gpu-hour prices %s, which --gpus does not offer", d)
	}
	return pools, nil
}
