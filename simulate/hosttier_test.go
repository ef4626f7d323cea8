package simulate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// checkHostTier checks a host tier's bookkeeping (INV-13): every slot is
// either free or in the LRU list, once; the table maps exactly the listed
// slots' hashes, each to its slot; and, at the end of a run (idle), no
// load reads a slot and no copy is pending.
func checkHostTier(t *testing.T, h *hostTier, idle bool) {
	t.Helper()
	n := len(h.ent)
	seen := make([]int, n)
	for _, s := range h.free {
		seen[s]++
		if h.ent[s].hash != 0 {
			t.Fatalf("INV-13: free host slot %d holds hash %x", s, h.ent[s].hash)
		}
	}
	listed, last := 0, int32(-1)
	for s := h.head; s >= 0; s = h.ent[s].next {
		if listed++; listed > n {
			t.Fatal("INV-13: the host tier's LRU list loops")
		}
		seen[s]++
		if h.ent[s].prev != last {
			t.Fatalf("INV-13: host slot %d: prev %d, want %d", s, h.ent[s].prev, last)
		}
		if got := h.table.get(h.ent[s].hash); got != s {
			t.Fatalf("INV-13: host slot %d holds hash %x, which the table maps to %d", s, h.ent[s].hash, got)
		}
		if idle && (h.ent[s].loads != 0 || h.ent[s].readyS > 1e300) {
			t.Fatalf("INV-13: host slot %d ends with %d loads, copy done at %g", s, h.ent[s].loads, h.ent[s].readyS)
		}
		last = s
	}
	if h.tail != last {
		t.Fatalf("INV-13: host tail %d, list ends at %d", h.tail, last)
	}
	for s, k := range seen {
		if k != 1 {
			t.Fatalf("INV-13: host slot %d is in %d places (free stack or LRU list)", s, k)
		}
	}
	entries := 0
	for _, e := range h.table.slots {
		if e.key != 0 {
			entries++
		}
	}
	if entries != listed {
		t.Fatalf("INV-13: the host table holds %d hashes, the LRU list %d slots", entries, listed)
	}
	if idle && len(h.pending) != 0 {
		t.Fatalf("INV-13: %d host copies pending at the end", len(h.pending))
	}
}

// hostChecker checks every engine's host tier after every step.
type hostChecker struct {
	t   *testing.T
	sim *Simulation
}

func (c *hostChecker) ObserveStep(*StepRecord) {
	for _, e := range c.sim.engines {
		if h := e.sched.host; h != nil {
			checkHostTier(c.t, h, false)
		}
	}
}

// sessionRepeat is A (a session's 8000-token prompt), a filler of 8000
// private tokens, then B with A's prompt, on a GPU cache of 600 blocks:
// the filler evicts most of A's blocks from the GPU.
func sessionRepeat(filler bool) []spec.Request {
	rs := []spec.Request{{ID: 0, ArrivalS: 0, PromptTokens: 8000, OutputTokens: 4, Session: 7}}
	if filler {
		rs = append(rs, spec.Request{ID: 1, ArrivalS: 2, PromptTokens: 8000, OutputTokens: 4})
	}
	return append(rs, spec.Request{ID: 2, ArrivalS: 4, PromptTokens: 8000, OutputTokens: 4, Session: 7})
}

// A repeated prompt whose blocks the GPU evicted costs less from the host
// tier than recomputed, and more than a GPU hit: B's TTFT orders GPU hit <
// host hit < recompute, and B's host hits load what the GPU lost.
func TestHostHitBetweenGPUHitAndRecompute(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 600
	cfg.Engine.MaxModelLen = 8192
	ttft := func(c runresult.Config, filler bool) (runresult.RequestMetrics, *runresult.Summary) {
		sum, sink, _, _ := simulate(t, c, sessionRepeat(filler))
		return sink.byID()[2], sum
	}
	gpu, _ := ttft(cfg, false)
	recompute, _ := ttft(cfg, true)
	tier := cfg
	tier.Engine.KVOffloadingSize = 4
	host, sum := ttft(tier, true)
	if gpu.CachedPromptTokens != 7984 || gpu.HostCachedPromptTokens != 0 {
		t.Errorf("GPU hit: %d GPU and %d host cached tokens, want 7984 (499 blocks) and 0", gpu.CachedPromptTokens, gpu.HostCachedPromptTokens)
	}
	if host.HostCachedPromptTokens == 0 || host.CachedPromptTokens+host.HostCachedPromptTokens != 7984 ||
		host.CachedPromptTokens != recompute.CachedPromptTokens {
		t.Errorf("host hit: %d GPU + %d host cached tokens, want the GPU's %d and the rest of 7984 from the host",
			host.CachedPromptTokens, host.HostCachedPromptTokens, recompute.CachedPromptTokens)
	}
	if !(gpu.TTFTMs < host.TTFTMs && host.TTFTMs < recompute.TTFTMs) {
		t.Errorf("B's TTFT: GPU hit %.2f ms, host hit %.2f ms, recompute %.2f ms; want GPU < host < recompute", gpu.TTFTMs, host.TTFTMs, recompute.TTFTMs)
	}
	// The load takes the bytes over the host link: 16 tokens x 128 KiB per
	// block for llama-3.1-8b, at the H100's 50 GB/s.
	loadMs := float64(host.HostCachedPromptTokens) * 131072 / 50e9 * 1e3
	if host.TTFTMs-gpu.TTFTMs < loadMs {
		t.Errorf("host hit TTFT %.2f ms is less than the GPU hit's %.2f ms plus the load %.2f ms", host.TTFTMs, gpu.TTFTMs, loadMs)
	}
	pc := sum.Metrics.PrefixCache
	if !pc.HostTier || pc.HostHitTokens != int64(host.HostCachedPromptTokens) || pc.HostLoadedBlocks != int64(host.HostCachedPromptTokens/16) ||
		pc.HostStoredBlocks != 2*500 {
		t.Errorf("stats %+v: want the host hits, their blocks loaded, and the full blocks of A and the filler stored once each (B's are A's)", pc)
	}
	t.Logf("B's TTFT: GPU hit %.2f ms, host hit %.2f ms (load %.2f ms), recompute %.2f ms", gpu.TTFTMs, host.TTFTMs, loadMs, recompute.TTFTMs)
}

// A workload with no reuse stores into the tier but never loads: copies to
// the host are asynchronous, so every request's row is unchanged.
func TestHostTierWithoutReuseChangesNoRow(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 2000
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-code", RatePerS: 4, NumRequests: 200, Seed: 5}
	off := runChecked(t, cfg)
	cfg.Engine.KVOffloadingSize = 2
	on := runChecked(t, cfg)
	if len(on.rows) != len(off.rows) {
		t.Fatalf("%d rows with the tier, %d without", len(on.rows), len(off.rows))
	}
	for i := range on.rows {
		if !sameRow(on.rows[i], off.rows[i]) {
			t.Fatalf("row %d: %+v with the tier, %+v without", i, on.rows[i], off.rows[i])
		}
	}
	if pc := on.sum.Metrics.PrefixCache; pc.HostStoredBlocks == 0 || pc.HostHitTokens != 0 || pc.HostEvictions == 0 {
		t.Errorf("stats %+v: want blocks stored and evicted (2 GiB is 1024 blocks), none loaded", pc)
	}
	if off.sum.Metrics.PrefixCache.HostTier || off.sum.Memory.HostBlocks != 0 {
		t.Errorf("without the tier: %+v, %d host blocks", off.sum.Metrics.PrefixCache, off.sum.Memory.HostBlocks)
	}
}

// Chat sessions from closed-loop clients outgrowing a small GPU cache into
// a host tier that holds them all: every request finds in the GPU and host
// tiers together exactly the history TestClosedLoopSessionsHitTheirHistory
// derives; every step keeps the tier's bookkeeping (INV-13); at the end
// every GPU block is returned (INV-4) and no load or copy is in flight.
func TestHostTierRunInvariants(t *testing.T) {
	w, err := datasets.ParseWorkload("sessions:groups=3,users=4,system=1000,turns=6,question=300,output=100")
	if err != nil {
		t.Fatal(err)
	}
	const n = 240
	c, err := datasets.NewClients(w, datasets.Arrivals{}, 12, n, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	src := &recordingClients{c, map[int]spec.Request{}}
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 400 // 6,400 tokens: a few sessions' history
	cfg.Engine.MaxModelLen = 4096
	cfg.Engine.KVOffloadingSize = 24 // 12,288 blocks: every session's history
	sink := &memSink{}
	check := &hostChecker{t: t}
	sim, err := New(cfg, Options{Requests: sink, Observer: check})
	if err != nil {
		t.Fatal(err)
	}
	check.sim = sim
	sum, err := sim.Run(src)
	if err != nil {
		t.Fatal(err)
	}
	asked := map[int]int{}
	for id, q := range src.sent {
		asked[id] = q.OutputTokens
	}
	checkConservation(t, sum, sink.rows, asked, sim)
	checkHostTier(t, sim.engines[0].sched.host, true)
	const bs = 16
	seenGroup := map[uint64]bool{}
	var host int64
	for id := 0; id < n; id++ {
		q, row := src.sent[id], sink.byID()[id]
		want := 0
		if q.Turn == 1 {
			if seenGroup[q.PrefixGroup] {
				want = q.PrefixTokens / bs * bs
			}
			seenGroup[q.PrefixGroup] = true
		} else {
			prev := w.Conversation.PromptTokens(q.Turn - 1)
			want = min((prev+q.OutputTokens-1)/bs, (q.PromptTokens-1)/bs) * bs
		}
		if row.Preemptions == 0 && row.CachedPromptTokens+row.HostCachedPromptTokens != want {
			t.Errorf("request %d (session %d turn %d): %d GPU + %d host cached tokens, want %d together",
				id, q.Session, q.Turn, row.CachedPromptTokens, row.HostCachedPromptTokens, want)
		}
		host += int64(row.HostCachedPromptTokens)
	}
	pc := sum.Metrics.PrefixCache
	if host == 0 || pc.HostHitTokens != host || pc.HostEvictions != 0 {
		t.Errorf("host hits %d in the rows, stats %+v: want some, the same, and no host eviction", host, pc)
	}
	t.Logf("GPU hit rate %.3f, host hit rate %.3f, %d preemptions", pc.HitRate, pc.HostHitRate, sum.Metrics.Preemptions)
}

// Two runs of the same sessions with the host tier give the same rows and
// summary (INV-9).
func TestHostTierDeterministic(t *testing.T) {
	w, err := datasets.ParseWorkload("sessions:groups=4,users=8,system=1000,turns=4,question=300,output=100")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 600
	cfg.Engine.KVOffloadingSize = 4
	var out [2][]byte
	for i := range out {
		c, err := datasets.NewClients(w, datasets.Arrivals{}, 16, 200, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		sim, err := New(cfg, Options{Requests: sink})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sim.Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Metrics.PrefixCache.HostHitTokens == 0 {
			t.Fatalf("no host hit: %+v", sum.Metrics.PrefixCache)
		}
		out[i] = fmt.Appendf(nil, "%+v\n%+v", sum.Metrics, sink.rows)
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("INV-9: two runs with the host tier differ")
	}
}

// With a host tier requests.csv and requests.arrow carry
// host_cached_prompt_tokens, and read back as written; without one their
// columns are the same as ever.
func TestHostTierRequestColumns(t *testing.T) {
	w, err := datasets.ParseWorkload("sessions:groups=4,users=8,system=1000,turns=4,question=300,output=100")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []float64{0, 4} {
		cfg := testConfig()
		cfg.Engine.NumGPUBlocksOverride = 600
		cfg.Engine.KVOffloadingSize = size
		c, err := datasets.NewClients(w, datasets.Arrivals{}, 16, 200, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		sum, err := Execute(mustResolve(t, cfg), c, Outputs{Dir: dir}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{runresult.SummaryFile, runresult.ConfigFile} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			has := false
			for _, k := range []string{"host_tier", "host_hit", "host_blocks", "host_link", "kv_offloading"} {
				has = has || bytes.Contains(b, []byte(k))
			}
			if has != (size > 0) {
				t.Errorf("size %g: %s names the host tier: %v; want it only with a tier (without one the file is as it always was)", size, f, has)
			}
		}
		csvBytes, _ := os.ReadFile(filepath.Join(dir, runresult.RequestsCSVFile))
		header, _, _ := bytes.Cut(csvBytes, []byte("\n"))
		if has := bytes.Contains(header, []byte("host_cached_prompt_tokens")); has != (size > 0) {
			t.Errorf("size %g: header %s", size, header)
		}
		for _, f := range []string{runresult.RequestsCSVFile, runresult.RequestsArrowFile} {
			rows, err := runresult.ReadRequestMetrics(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			var host int64
			for _, r := range rows {
				host += int64(r.HostCachedPromptTokens)
			}
			if host != sum.Metrics.PrefixCache.HostHitTokens || (size > 0) != (host > 0) {
				t.Errorf("size %g: %s holds %d host cached tokens, the summary %d", size, f, host, sum.Metrics.PrefixCache.HostHitTokens)
			}
		}
	}
}

// The tier evicts as vLLM's LRUOffloadingManager: least recently used
// first, never a block whose copy is pending or that a load reads, and a
// store that cannot find room changes nothing.
func TestHostTierEvictsLeastRecentlyUsed(t *testing.T) {
	h := newHostTier(3, 16, 1e6, 1e9) // 1 ms a block
	slots, ok := h.store([]uint64{1, 2, 3}, 0, nil)
	if !ok || len(slots) != 3 {
		t.Fatalf("store into an empty tier: %v %v", slots, ok)
	}
	if got, _ := h.store([]uint64{4}, 0, nil); got != nil {
		t.Fatalf("stored over blocks whose copies are pending: %v", got)
	}
	h.issue(1) // the step ends at 1 s; its three copies, one after another, end at 1.003 s
	if h.ent[slots[2]].readyS != 1.003 && !near(h.ent[slots[2]].readyS, 1.003) {
		t.Fatalf("third copy ready at %g s, want 1.003 (one after another from the step's end)", h.ent[slots[2]].readyS)
	}
	h.touch(slots[0])       // 1 is now the most recent: order 2, 3, 1
	h.ent[slots[1]].loads++ // a load reads 2
	got, ok := h.store([]uint64{4}, 2, nil)
	if !ok || h.table.get(3) != -1 || h.table.get(2) != slots[1] || h.table.get(4) != got[0] {
		t.Fatalf("storing 4 evicted the wrong block: 2 at %d, 3 at %d, 4 at %d; want 3 gone (2 is read)", h.table.get(2), h.table.get(3), h.table.get(4))
	}
	// Order 2 (read), 1, 4 (copy pending): only 1 can go.
	if _, ok := h.store([]uint64{5, 6}, 2, nil); ok {
		t.Fatal("stored two blocks where only one can go: want all or nothing")
	}
	if h.table.get(1) < 0 || h.evictions != 1 {
		t.Fatalf("a refused store evicted: 1 at %d, %d evictions", h.table.get(1), h.evictions)
	}
	h.ent[slots[1]].loads--
	if got, ok := h.store([]uint64{5, 6}, 2, nil); !ok || h.table.get(2) != -1 || h.table.get(1) != -1 || len(got) != 2 {
		t.Fatalf("with 2 no longer read, 5 and 6 should replace 2 and 1: %v %v", got, ok)
	}
	checkHostTier(t, h, false)
}
