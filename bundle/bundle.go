package bundle

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/ftk-dev/ftk/spec"
)

// Bundle is a set of predictors of one device, one model and one
// measurement type.
type Bundle struct {
	meta  Meta
	keys  []spec.OpKey
	preds map[spec.OpKey]*Predictor
	// forests in meta.Predictors order, for writing.
	forests []*Forest
}

// New is the bundle of meta's predictors with their trained models (in
// meta.Predictors order): what fit writes.
func New(meta Meta, ms []*Model) *Bundle {
	b := &Bundle{meta: meta}
	b.index(ms)
	return b
}

// index builds the predictors from the metadata and trained models.
func (b *Bundle) index(ms []*Model) {
	b.preds = make(map[spec.OpKey]*Predictor, len(ms))
	b.keys = b.keys[:0]
	b.forests = b.forests[:0]
	for i, m := range ms {
		meta := &b.meta.Predictors[i]
		b.preds[meta.Key] = NewPredictor(meta, m)
		b.keys = append(b.keys, meta.Key)
		b.forests = append(b.forests, m.f)
	}
	slices.SortFunc(b.keys, CompareKeys)
}

// Compile builds every predictor's lookup grid now, in parallel, instead of
// on each predictor's first query.
func (b *Bundle) Compile() {
	ps := make([]*Predictor, 0, len(b.keys))
	for _, k := range b.keys {
		ps = append(ps, b.preds[k])
	}
	// Largest forests first.
	slices.SortFunc(ps, func(a, c *Predictor) int { return len(c.m.f.Nodes) - len(a.m.f.Nodes) })
	next := make(chan *Predictor)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				p.Model()
			}
		}()
	}
	for _, p := range ps {
		next <- p
	}
	close(next)
	wg.Wait()
}

// Meta describes the bundle.
func (b *Bundle) Meta() *Meta { return &b.meta }

// Device is the device the profiles were measured on.
func (b *Bundle) Device() string { return b.meta.Device }

// Model is the model the profiles were measured for.
func (b *Bundle) Model() string { return b.meta.Model }

// Measurement is the measurement type of every predictor.
func (b *Bundle) Measurement() string { return b.meta.Measurement }

// Keys lists the predictors' keys, sorted.
func (b *Bundle) Keys() []spec.OpKey { return slices.Clone(b.keys) }

// Predictor returns the predictor of key k. A key with an empty
// measurement type means the bundle's.
func (b *Bundle) Predictor(k spec.OpKey) (*Predictor, bool) {
	if k.Measurement == "" {
		k.Measurement = b.meta.Measurement
	}
	p, ok := b.preds[k]
	return p, ok
}

// Extrapolated returns the out-of-domain query count of every predictor
// that had any, by key.
func (b *Bundle) Extrapolated() map[spec.OpKey]int64 {
	out := map[spec.OpKey]int64{}
	for k, p := range b.preds {
		if n := p.Extrapolated(); n > 0 {
			out[k] = n
		}
	}
	return out
}

// Check refuses a bundle that does not match what the caller was asked to
// do: another device or another measurement type ("" skips a check).
func (b *Bundle) Check(device, measurement string) error {
	if device != "" && !sameDevice(device, b.meta.Device) {
		return fmt.Errorf("model bundle is for device %s, not %s: fit a bundle on %s profiles", b.meta.Device, device, device)
	}
	if measurement != "" && measurement != b.meta.Measurement {
		return fmt.Errorf("model bundle holds %s predictors, not %s: fit one with --measurement %s", b.meta.Measurement, measurement, measurement)
	}
	return nil
}

// sameDevice compares device names through the catalog's aliases.
func sameDevice(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := spec.LookupDevice(a)
	db, errB := spec.LookupDevice(b)
	return errA == nil && errB == nil && da.Name == db.Name
}
