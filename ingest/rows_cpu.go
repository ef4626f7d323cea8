package ingest

import (
	"fmt"

	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

var cpuExtras = []extraCol{
	{"model_name", profilecsv.ColModelName, kindString},
	{"scheduling_mode", profilecsv.ColSchedulingMode, kindString},
	{"pipeline_stage_id", profilecsv.ColPipelineStageID, kindInt},
}

// cpuRows reads the CPU overhead format: one operator per column stem
// (schedule -> cpu_schedule, ...) from <stem>_median and <stem>_mean (and
// _min/_max/_std/_count where present), features (batch_size,
// num_prefill_tokens, num_decode_tokens), keyed by tensor_parallel_degree,
// measurement HOST_WALL. The model comes from model_name unless a flag or
// ftk-collect.yaml names it. A stem without a _median column (the format
// gives ray_comm_time only as a mean) takes its mean as the median; a
// ray_comm_time of 0 means no Ray hand-off and is skipped, not excluded.
func cpuRows(r *reader) (rowFunc, error) {
	if err := r.h.require(profilecsv.ColBatchSize, profilecsv.ColTensorParallelDegree, profilecsv.ColNumPrefillTokens, profilecsv.ColNumDecodeTokens); err != nil {
		return nil, err
	}
	batchCol := r.use(profilecsv.ColBatchSize)
	tpCol := r.use(profilecsv.ColTensorParallelDegree)
	preCol := r.use(profilecsv.ColNumPrefillTokens)
	decCol := r.use(profilecsv.ColNumDecodeTokens)
	modelCol := r.use(profilecsv.ColModelName)
	modeCol := r.use(profilecsv.ColSchedulingMode)
	stageCol := r.use(profilecsv.ColPipelineStageID)
	var ops []statCols
	var ids []int32
	for _, c := range profilecsv.HostOps {
		s := statCols{op: c.Op,
			median: r.use(c.Stem + "_median"), mean: r.use(c.Stem + "_mean"),
			min: r.use(c.Stem + "_min"), max: r.use(c.Stem + "_max"),
			std: r.use(c.Stem + "_std"), cnt: r.use(c.Stem + "_count")}
		switch {
		case s.median < 0 && s.mean < 0:
			continue
		case s.median < 0:
			s.median = s.mean
			r.in.Notes = append(r.in.Notes, fmt.Sprintf("no %s_median column: %s median taken from %s_mean", c.Stem, c.Op, c.Stem))
		case s.mean < 0:
			s.mean = s.median
			r.in.Notes = append(r.in.Notes, fmt.Sprintf("no %s_mean column: %s mean taken from %s_median", c.Stem, c.Op, c.Stem))
		}
		if (s.min >= 0) != (s.max >= 0) {
			return nil, fmt.Errorf("%s has only one of _min and _max", c.Stem)
		}
		ops = append(ops, s)
		ids = append(ids, r.tab.idOf(c.Op))
	}
	return func(r *reader) {
		tp, ok := r.posInt(tpCol)
		if !ok {
			return
		}
		var x [3]float64
		for i, c := range []int{batchCol, preCol, decCol} {
			if x[i], ok = r.num(c); !ok {
				return
			}
		}
		if x[0] < 1 {
			r.drop(batchCol, "", reasonBadFeature+": batch_size below 1")
			return
		}
		if !r.modelFixed && modelCol >= 0 {
			r.modelID = r.fileModel
			if name := r.str(modelCol); name != "" {
				r.modelID = r.tab.idOf(canonicalModel(name))
			}
		}
		cond := r.condID("mode=", r.str(modeCol), " stage=", r.str(stageCol))
		for i, c := range ops {
			if c.op == spec.OpCPURayComm {
				if v, err := parseFloat(r.cell(c.median)); err == nil && v == 0 {
					r.tally("", "cpu_ray_comm cells of 0 (no Ray hand-off): not ingested")
					continue
				}
			}
			st, res := r.stats(c, c.op)
			if res == statOK {
				r.emit(recKey{op: ids[i], tp: int32(tp)}, []float64{x[0], x[1], x[2]}, st, varPure, phNone, cond)
			}
		}
	}, nil
}
