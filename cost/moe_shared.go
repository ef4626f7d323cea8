package cost

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
)

// RoutingTables shares routing tables (moe_tables.go) between cost models
// that draw and price MoE routing alike: the probes of one search
// candidate at different arrival rates, and candidates that differ only in
// what routing does not see (engine limits, the other role of a
// disaggregated layout). A table is a function of its router, its token
// bin, the routing seed and how a layer is priced, not of the run that
// builds it (the router's permutation restarts at every table,
// expertRouter.restart), so a run that takes a table from here gets the
// table it would have built: the same bytes out, whichever run built it.
//
// Only routing priced by the built-in device model is shared: a bundle's
// predictors count their extrapolations as they are called (the run's
// report sums them), so a run with bundle-priced routed ops builds its
// own tables.
//
// It holds at most maxTables tables; past that it forgets the oldest
// routing (its tables stay with the runs that hold them). Safe for
// concurrent use.
type RoutingTables struct {
	mu        sync.Mutex
	maxTables int
	tables    int
	sets      map[string]*tableSet
	order     []*tableSet // oldest first
}

// tableSet is the tables of one routing: by router and bin.
type tableSet struct {
	key    string
	tables map[[2]int32]*routeTable
}

// DefaultRoutingTables is how many routing tables NewRoutingTables(0)
// holds: about 20 MB (a table is 577 bytes, 64 draws of two float32
// ratios and their extrapolation bits). A router has at most 191 bins
// (tokenBin of 16,384 tokens x DP 8), so that is the whole range of about
// 170 routings of one router each.
const DefaultRoutingTables = 1 << 15

// NewRoutingTables returns an empty store of at most maxTables tables (0:
// DefaultRoutingTables).
func NewRoutingTables(maxTables int) *RoutingTables {
	if maxTables <= 0 {
		maxTables = DefaultRoutingTables
	}
	return &RoutingTables{maxTables: maxTables, sets: map[string]*tableSet{}}
}

// get returns the table of router ri and bin b of the routing keyed key,
// nil when the store has none.
func (s *RoutingTables) get(key string, ri, b int) *routeTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	if set := s.sets[key]; set != nil {
		return set.tables[[2]int32{int32(ri), int32(b)}]
	}
	return nil
}

// put stores t as the table of router ri and bin b of the routing keyed
// key, forgetting the oldest routings when the store is full. A table
// stored twice (two runs built it at once) keeps the first: both are the
// same.
func (s *RoutingTables) put(key string, ri, b int, t *routeTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[key]
	if set == nil {
		set = &tableSet{key: key, tables: map[[2]int32]*routeTable{}}
		s.sets[key] = set
		s.order = append(s.order, set)
	}
	k := [2]int32{int32(ri), int32(b)}
	if set.tables[k] != nil {
		return
	}
	set.tables[k] = t
	s.tables++
	for s.tables > s.maxTables && len(s.order) > 1 {
		old := s.order[0]
		s.order = s.order[1:]
		delete(s.sets, old.key)
		s.tables -= len(old.tables)
	}
}

// Len is the number of tables held.
func (s *RoutingTables) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tables
}

// sharingKey is what a routing table of rm depends on besides its router
// index and bin: the seed and routers (popularities, top-k, experts), the
// EP ranks and their experts, and everything layerCost and evenCost price
// with (the routed ops, the device model and its device record, the
// calibration scales, the measurement type, the EP exchange). Empty when
// the tables cannot be shared: an op of the routed group has a predictor.
func (rm *routingModel) sharingKey() string {
	cm := rm.cm
	for i := range rm.ops {
		if rm.ops[i].pred != nil {
			return ""
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d routing=%+v experts=%d topk=%d ep=%d local=%d hidden=%d\n",
		rm.seed, rm.cfg, rm.experts, rm.topK, rm.ep, rm.local, cm.model.HiddenSize)
	for i := range rm.ops {
		fmt.Fprintf(&b, "op %d %+v comp=%d\n", i, rm.ops[i].op, rm.ops[i].comp)
	}
	roof := cm.roof
	roof.Device = nil
	fmt.Fprintf(&b, "roofline=%+v\ndevice=%+v\nscale=%v measurement=%s exchange=%+v\n",
		roof, cm.roof.Device.Device, cm.scale, cm.measurement, cm.exchange)
	for _, r := range rm.routers {
		fmt.Fprintf(&b, "router uniform=%v permute=%v incl=", r.uniform, r.permute)
		var f [8]byte
		for _, p := range r.incl {
			binary.LittleEndian.PutUint64(f[:], math.Float64bits(p))
			b.Write(f[:])
		}
		b.WriteString(" alias=")
		for i, p := range r.alias.prob {
			binary.LittleEndian.PutUint64(f[:], math.Float64bits(p))
			b.Write(f[:])
			binary.LittleEndian.PutUint32(f[:4], uint32(r.alias.alias[i]))
			b.Write(f[:4])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
