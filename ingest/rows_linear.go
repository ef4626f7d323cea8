package ingest

var linearExtras = []extraCol{
	{"n_head", "n_head", kindInt},
	{"n_kv_head", "n_kv_head", kindInt},
	{"n_embd", "n_embd", kindInt},
	{"n_expanded_embd", "n_expanded_embd", kindInt},
	{"vocab_size", "vocab_size", kindInt},
	{"use_gated_mlp", "use_gated_mlp", kindBool},
	{"use_qk_norm", "use_qk_norm", kindBool},
	{"attn_output_gate", "attn_output_gate", kindBool},
}

// linearRows reads linear_op.csv and legacy Vidur mlp.csv: every
// time_stats.<op> column group is an operator with the feature num_tokens,
// keyed by num_tensor_parallel_workers. A blank group means the operator
// was not measured on that row.
func linearRows(r *reader) (rowFunc, error) {
	if err := r.h.require("num_tokens", "num_tensor_parallel_workers"); err != nil {
		return nil, err
	}
	tokCol := r.use("num_tokens")
	tpCol := r.use("num_tensor_parallel_workers")
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
