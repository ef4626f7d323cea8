package spec

import "fmt"

// Layout is a parallel layout: tensor, pipeline, expert and data parallel
// degrees. The zero value is not valid; use Normalize to fill in ones.
type Layout struct {
	TP int `json:"tp" yaml:"tp"`
	PP int `json:"pp" yaml:"pp"`
	EP int `json:"ep" yaml:"ep"`
	DP int `json:"dp" yaml:"dp"`
}

// Normalize returns l with zero degrees set to 1.
func (l Layout) Normalize() Layout {
	for _, p := range []*int{&l.TP, &l.PP, &l.EP, &l.DP} {
		if *p == 0 {
			*p = 1
		}
	}
	return l
}

// GPUs is the number of GPUs one replica of the layout uses.
func (l Layout) GPUs() int { l = l.Normalize(); return l.TP * l.PP * l.DP }

// MoETP is the tensor-parallel degree inside each expert: the TP x DP ranks
// of a stage hold the experts split EP ways and each expert split MoETP ways.
func (l Layout) MoETP() int {
	l = l.Normalize()
	if t := l.TP * l.DP / l.EP; t > 0 {
		return t
	}
	return 1
}

func (l Layout) String() string {
	l = l.Normalize()
	return fmt.Sprintf("TP%d/PP%d/EP%d/DP%d", l.TP, l.PP, l.EP, l.DP)
}

// Validate checks that the layout can run model m.
func (l Layout) Validate(m *Model) error {
	for _, d := range []struct {
		name string
		v    int
	}{{"TP", l.TP}, {"PP", l.PP}, {"EP", l.EP}, {"DP", l.DP}} {
		if d.v < 0 {
			return fmt.Errorf("layout %s: %s must be positive, got %d", l, d.name, d.v)
		}
	}
	l = l.Normalize()
	switch {
	case m.NumHeads%l.TP != 0:
		return fmt.Errorf("layout %s: TP=%d does not divide the %d attention heads of %s", l, l.TP, m.NumHeads, m.Name)
	case m.NumKVHeads >= l.TP && m.NumKVHeads%l.TP != 0:
		return fmt.Errorf("layout %s: TP=%d does not divide the %d KV heads of %s", l, l.TP, m.NumKVHeads, m.Name)
	case m.NumKVHeads < l.TP && l.TP%m.NumKVHeads != 0:
		return fmt.Errorf("layout %s: the %d KV heads of %s cannot be replicated evenly over TP=%d", l, m.NumKVHeads, m.Name, l.TP)
	case l.PP > m.NumLayers:
		return fmt.Errorf("layout %s: PP=%d exceeds the %d layers of %s", l, l.PP, m.NumLayers, m.Name)
	case l.EP > 1 && !m.IsMoE():
		return fmt.Errorf("layout %s: EP=%d needs an MoE model, %s is dense", l, l.EP, m.Name)
	case m.IsMoE() && m.NumExperts%l.EP != 0:
		return fmt.Errorf("layout %s: EP=%d does not divide the %d experts of %s", l, l.EP, m.NumExperts, m.Name)
	case l.EP > 1 && (l.TP*l.DP)%l.EP != 0:
		return fmt.Errorf("layout %s: EP=%d must divide TP x DP = %d (experts are spread over the ranks of a stage)", l, l.EP, l.TP*l.DP)
	}
	if m.IsMoE() && m.MoEIntermediateSize%l.MoETP() != 0 {
		return fmt.Errorf("layout %s: expert width %d of %s is not divisible by the in-expert TP degree %d", l, m.MoEIntermediateSize, m.Name, l.MoETP())
	}
	if m.FirstDenseLayers > 0 || !m.IsMoE() {
		if m.IntermediateSize%l.TP != 0 {
			return fmt.Errorf("layout %s: TP=%d does not divide the MLP width %d of %s", l, l.TP, m.IntermediateSize, m.Name)
		}
	}
	return nil
}

// StageLayers returns the [first, end) layer range of pipeline stage s.
// Layers are split as evenly as possible; the first L mod PP stages take one
// more.
func (l Layout) StageLayers(m *Model, s int) (first, end int) {
	pp := l.Normalize().PP
	base, extra := m.NumLayers/pp, m.NumLayers%pp
	first = s*base + min(s, extra)
	end = first + base
	if s < extra {
		end++
	}
	return first, end
}
