package ingest

import "github.com/ftk-dev/ftk/profilecsv"

var linearExtras = []extraCol{
	{"n_head", profilecsv.ColNHead, kindInt},
	{"n_kv_head", profilecsv.ColNKVHead, kindInt},
	{"n_embd", profilecsv.ColNEmbd, kindInt},
	{"n_expanded_embd", profilecsv.ColNExpandedEmbd, kindInt},
	{"vocab_size", profilecsv.ColVocabSize, kindInt},
	{"use_gated_mlp", profilecsv.ColUseGatedMLP, kindBool},
	{"use_qk_norm", profilecsv.ColUseQKNorm, kindBool},
	{"attn_output_gate", profilecsv.ColAttnOutputGate, kindBool},
}

// linearRows reads linear_op.csv and legacy Vidur mlp.csv: every
// time_stats.<op> column group is an operator with the feature num_tokens,
// keyed by num_tensor_parallel_workers. A blank group means the operator
// was not measured on that row.
func linearRows(r *reader) (rowFunc, error) {
	if err := r.h.require(profilecsv.ColNumTokens, profilecsv.ColNumTensorParallelWorkers); err != nil {
		return nil, err
	}
	tokCol := r.use(profilecsv.ColNumTokens)
	tpCol := r.use(profilecsv.ColNumTensorParallelWorkers)
	ops, ids, err := r.timeOpStats()
	if err != nil {
		return nil, err
	}
	return func(r *reader) {
		tokens, ok := r.count(tokCol)
		if !ok {
			return
		}
		tp, ok := r.posInt(tpCol)
		if !ok {
			return
		}
		for i, c := range ops {
			st, res := r.stats(c, c.op)
			if res == statOK {
				r.emit(recKey{op: ids[i], tp: int32(tp)}, []float64{tokens}, st, varPure, phNone, 0)
			}
		}
	}, nil
}
