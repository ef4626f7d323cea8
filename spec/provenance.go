package spec

import (
	"fmt"
	"strings"
)

// Profiling backends: where the timings of a profile came from. ingest
// records one per input file (dataset manifest), fit carries them into the
// bundle metadata, and simulate prints them in its summary, so a
// prediction never reads as measured when it was modelled.
const (
	// ProfileSynthetic rows come from collect's synthetic backend, the
	// roofline device model with seeded noise: no measurement.
	ProfileSynthetic = "synthetic"
	// ProfileTorchCPU rows were measured by collect's torch worker on the
	// host CPU (measurement type CPU).
	ProfileTorchCPU = "torch-cpu"
	// ProfileGPU rows were measured on a GPU: collect's torch worker on
	// CUDA, or a GPU profiler's CSV (Frontier, Vidur) that names no
	// backend.
	ProfileGPU = "gpu"
	// ProfileRoofline is no profile at all: simulate without a bundle
	// prices every op with the built-in roofline device model.
	ProfileRoofline = "roofline"
)

// ProfilingBackend names the backend of a profile file from what it says:
// a profiling_backend cell or ftk-collect.yaml backend (collect writes
// synthetic or torch; "" when absent), and whether it was timed on the
// CPU (measurement type CPU, or collect's device label "cpu" for the host
// parts of a CPU sweep). A torch file timed on the CPU is torch-cpu, else
// gpu; a file that names no backend was written by a GPU profiler unless
// it was timed on the CPU.
func ProfilingBackend(named string, onCPU bool) (string, error) {
	switch strings.ToLower(strings.TrimSpace(named)) {
	case ProfileSynthetic:
		return ProfileSynthetic, nil
	case "torch", "", ProfileGPU, ProfileTorchCPU:
		if onCPU {
			return ProfileTorchCPU, nil
		}
		return ProfileGPU, nil
	}
	return "", fmt.Errorf("unknown profiling backend %q (want synthetic or torch)", named)
}

// ProfilesLabel says what profiles of the given backends, taken on
// device, are, as simulate's summary prints them after "bundle fitted on":
// "SYNTHETIC profiles of h100 (the roofline device model with noise, not
// measured)", "GPU profiles of a800 (measured)".
func ProfilesLabel(backends []string, device string) string {
	if len(backends) == 0 {
		return "profiles of unknown origin (no profiling backend recorded)"
	}
	names := make([]string, len(backends))
	var notes []string
	for i, b := range backends {
		switch b {
		case ProfileSynthetic:
			names[i] = "SYNTHETIC"
			notes = append(notes, "the roofline device model with noise, not measured")
		case ProfileTorchCPU:
			names[i] = "torch-CPU"
			notes = append(notes, "timed on the host CPU, not a GPU")
		case ProfileGPU:
			names[i] = "GPU"
			notes = append(notes, "measured")
		default:
			names[i] = b
		}
	}
	label := strings.Join(names, " + ") + " profiles"
	if device != "" {
		label += " of " + device
	}
	if len(notes) > 0 {
		label += " (" + strings.Join(notes, "; ") + ")"
	}
	return label
}
