package ingest

import (
	"math"

	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// Attention phases: which part of a batch a row measured.
const (
	phasePrefill = "prefill"
	phaseDecode  = "decode"
	phaseMixed   = "mixed" // prefill and decode sequences in one batch
)

var attentionExtras = []extraCol{
	{"mode", profilecsv.ColMode, kindString},
	{"attention_backend", profilecsv.ColAttentionBackend, kindString},
	{"n_embd", profilecsv.ColNEmbd, kindInt},
	{"n_q_head", profilecsv.ColNQHead, kindInt},
	{"n_kv_head", profilecsv.ColNKVHead, kindInt},
	{"block_size", profilecsv.ColBlockSize, kindInt},
	{"max_model_len", profilecsv.ColMaxModelLen, kindInt},
	{"is_chunked_prefill_sample", profilecsv.ColIsChunkedPrefillSample, kindBool},
	{"csv_batch_size", profilecsv.ColBatchSize, kindInt},
	{"csv_kv_cache_size", profilecsv.ColKVCacheSize, kindInt},
	{"csv_prefill_chunk_size", profilecsv.ColPrefillChunkSize, kindInt},
	{"total_tokens", profilecsv.ColTotalTokens, kindInt},
	{"seq_lens", profilecsv.ColSeqLens, kindString},
	{"prefill_seq_lens", profilecsv.ColPrefillSeqLens, kindString},
	{"prefill_kv_cache_sizes", profilecsv.ColPrefillKVCacheSizes, kindString},
	{"decode_kv_cache_sizes", profilecsv.ColDecodeKVCacheSizes, kindString},
}

// Notes on the attention cells that time an empty call.
const (
	noteDecodeInPrefill = "attn_decode cells of prefill-only rows (an empty call, not a measurement): not ingested"
	notePrefillInDecode = "attn_prefill cells of decode-only rows (an empty call, not a measurement): not ingested"
)

// tokenOps are the attention-family operators whose cost follows the
// batch's token count.
var tokenOps = []string{spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnOutputReshape}

// attentionRows reads attention*.csv (pure, mixed, true-mixed and combined
// variants).
//
//   - Prefill row, one sequence: attn_prefill at (kv_cache_size,
//     prefill_chunk_size), variant pure.
//   - Prefill row with several sequences (is_mixed_batch or a seq_lens list
//     longer than one): the chunks seq_lens on top of kv_cache_size each are
//     reduced with spec.PrefillEquivalent, variant mixed.
//   - Decode row: attn_decode at (batch_size, kv_cache_size), variant pure.
//   - True-mixed row (is_true_mixed_batch): attn_prefill from
//     spec.PrefillEquivalent(prefill_seq_lens, prefill_kv_cache_sizes) and
//     attn_decode from spec.DecodeEquivalent(decode_kv_cache_sizes), both
//     variant true_mixed: the two kernels ran in one batch, so fit may
//     prefer the pure rows.
//
// The reshape and KV-save ops take num_tokens from the num_tokens column
// (collect's files), else total_tokens, else the sum of the sequences' new
// tokens. attn_decode cells of prefill-only rows and
// attn_prefill cells of decode-only rows time an empty call and are
// skipped (counted in the input's notes).
func attentionRows(r *reader) (rowFunc, error) {
	if err := r.h.require(profilecsv.ColNumTensorParallelWorkers, profilecsv.ColIsPrefill, profilecsv.ColBatchSize, profilecsv.ColKVCacheSize, profilecsv.ColPrefillChunkSize); err != nil {
		return nil, err
	}
	tpCol := r.use(profilecsv.ColNumTensorParallelWorkers)
	prefillCol := r.use(profilecsv.ColIsPrefill)
	batchCol := r.use(profilecsv.ColBatchSize)
	kvCol := r.use(profilecsv.ColKVCacheSize)
	chunkCol := r.use(profilecsv.ColPrefillChunkSize)
	mixedCol := r.use(profilecsv.ColIsMixedBatch)
	trueCol := r.use(profilecsv.ColIsTrueMixedBatch)
	seqCol := r.use(profilecsv.ColSeqLens)
	totalCol := r.use(profilecsv.ColNumTokens) // collect's: the new tokens of the batch
	if totalCol < 0 {
		totalCol = r.use(profilecsv.ColTotalTokens)
	} else {
		r.use(profilecsv.ColTotalTokens)
	}
	plCol := r.use(profilecsv.ColPrefillSeqLens)
	pkCol := r.use(profilecsv.ColPrefillKVCacheSizes)
	dkCol := r.use(profilecsv.ColDecodeKVCacheSizes)
	cols := map[string]statCols{}
	opID := map[string]int32{}
	for _, op := range r.h.timeOps() {
		opID[op] = r.tab.idOf(op)
		c, err := r.h.stats(op)
		if err != nil {
			return nil, err
		}
		r.useStats(c)
		cols[op] = c
	}
	var ctx, pl, pk, dk, seq []int
	condOf := [...]int32{phPrefill: r.tab.idOf(phasePrefill), phDecode: r.tab.idOf(phaseDecode)}

	return func(r *reader) {
		tp, ok := r.posInt(tpCol)
		if !ok {
			return
		}
		if len(trimSpace(r.cell(prefillCol))) == 0 {
			r.drop(prefillCol, "", reasonBlankKey)
			return
		}
		isPrefill, ok1 := r.flag(prefillCol)
		mixed, ok2 := r.flag(mixedCol)
		trueMixed, ok3 := r.flag(trueCol)
		batch, ok4 := r.whole(batchCol)
		kv, ok5 := r.whole(kvCol)
		chunk, ok6 := r.whole(chunkCol)
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
			return
		}
		seq = seq[:0]
		if isPrefill && !trueMixed { // decode rows' seq_lens are all ones
			if seq, ok = r.list(seqCol, seq); !ok {
				return
			}
		}
		total, hasTotal, ok := r.optWhole(totalCol)
		if !ok {
			return
		}
		key := recKey{tp: int32(tp)}
		emit := func(op string, feats []float64, variant, phase uint8, cond int32) {
			c, present := cols[op]
			if !present {
				return
			}
			if st, res := r.stats(c, op); res == statOK {
				key.op = opID[op]
				r.emit(key, feats, st, variant, phase, cond)
			}
		}
		skip := func(op, note string) {
			if c, present := cols[op]; present && len(trimSpace(r.fields[c.median])) > 0 {
				r.tally("", note)
			}
		}
		emitTokens := func(t float64, variant, phase uint8, cond int32) {
			if hasTotal {
				t = total
			}
			if t <= 0 {
				r.drop(totalCol, "", reasonBadFeature+": no tokens in the batch")
				return
			}
			for _, op := range tokenOps {
				emit(op, []float64{t}, variant, phase, cond)
			}
		}

		switch {
		case trueMixed:
			var okL bool
			if pl, okL = r.list(plCol, pl); !okL {
				return
			}
			if pk, okL = r.list(pkCol, pk); !okL {
				return
			}
			if dk, okL = r.list(dkCol, dk); !okL {
				return
			}
			if len(pl) == 0 || len(pl) != len(pk) || len(dk) == 0 {
				r.drop(plCol, "", "true-mixed row needs prefill_seq_lens, prefill_kv_cache_sizes (same length) and decode_kv_cache_sizes")
				return
			}
			// Each part of a true-mixed batch ran beside the other, so the
			// batch composition is a condition of both samples.
			comp := r.condID(phaseMixed, " prefill=", r.str(plCol), "@", r.str(pkCol), " decode=", r.str(dkCol))
			pkv, pchunk := spec.PrefillEquivalent(pl, pk)
			db, dkv := spec.DecodeEquivalent(dk)
			if pchunk <= 0 {
				r.drop(plCol, spec.OpAttnPrefill, reasonBadFeature+": no prefill tokens")
			} else {
				emit(spec.OpAttnPrefill, []float64{pkv, pchunk}, varTrueMixed, phMixed, comp)
			}
			emit(spec.OpAttnDecode, []float64{db, dkv}, varTrueMixed, phMixed, comp)
			emitTokens(float64(sum(pl)+len(dk)), varTrueMixed, phMixed, comp)
		case isPrefill:
			variant := varPure
			var pkv, pchunk, t float64
			if mixed || len(seq) > 1 {
				if len(seq) == 0 {
					r.drop(seqCol, "", "mixed prefill row without seq_lens")
					return
				}
				variant = varMixed
				ctx = ctx[:0]
				for range seq {
					ctx = append(ctx, int(kv))
				}
				pkv, pchunk = spec.PrefillEquivalent(seq, ctx)
				t = float64(sum(seq))
			} else {
				pkv, pchunk = kv, chunk
				if pchunk == 0 && len(seq) == 1 {
					pchunk = float64(seq[0])
				}
				t = pchunk
			}
			if pchunk <= 0 {
				r.drop(chunkCol, "", reasonBadFeature+": prefill row with no prefill tokens")
				return
			}
			emit(spec.OpAttnPrefill, []float64{pkv, pchunk}, variant, phPrefill, condOf[phPrefill])
			emitTokens(t, variant, phPrefill, condOf[phPrefill])
			skip(spec.OpAttnDecode, noteDecodeInPrefill)
		default:
			variant := varPure
			if mixed {
				variant = varMixed
			}
			if batch < 1 || batch != math.Trunc(batch) {
				r.drop(batchCol, "", reasonNotInteger+": decode batch_size")
				return
			}
			emit(spec.OpAttnDecode, []float64{batch, kv}, variant, phDecode, condOf[phDecode])
			emitTokens(batch, variant, phDecode, condOf[phDecode])
			skip(spec.OpAttnPrefill, notePrefillInDecode)
		}
	}, nil
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
