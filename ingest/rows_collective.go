package ingest

import (
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

var collectiveExtras = []extraCol{
	{"collective", profilecsv.ColCollective, kindString},
	{"rank", profilecsv.ColRank, kindInt},
	{"devices_per_node", profilecsv.ColDevicesPerNode, kindInt},
	{"max_devices_per_node", profilecsv.ColMaxDevicesPerNode, kindInt},
}

// collectiveRows reads Vidur network files (all_reduce.csv, send_recv.csv):
// feature size_bytes (the size column). all_reduce is keyed TP = Workers =
// num_workers (the TP group it serves); send_recv TP = 1, Workers =
// num_workers; EP dispatch/combine by num_tensor_parallel_workers (1 when
// absent) and Workers = num_workers. A group of several workers with
// devices_per_node 1 spans nodes: its samples are keyed CrossNode, apart
// from the intra-node ones of the same group size. devices_per_node is also
// kept as a column.
func collectiveRows(r *reader) (rowFunc, error) {
	if err := r.h.require(profilecsv.ColNumWorkers, profilecsv.ColSize); err != nil {
		return nil, err
	}
	workersCol := r.use(profilecsv.ColNumWorkers)
	sizeCol := r.use(profilecsv.ColSize)
	tpCol := r.use(profilecsv.ColNumTensorParallelWorkers)
	dpnCol := r.use(profilecsv.ColDevicesPerNode)
	ops, ids, err := r.timeOpStats()
	if err != nil {
		return nil, err
	}
	return func(r *reader) {
		workers, ok := r.posInt(workersCol)
		if !ok {
			return
		}
		size, ok := r.pos(sizeCol)
		if !ok {
			return
		}
		tp := 1
		if tpCol >= 0 {
			if tp, ok = r.posInt(tpCol); !ok {
				return
			}
		}
		cond := r.condID("devices_per_node=", r.str(dpnCol))
		cross := false
		if dpnCol >= 0 && workers > 1 {
			if dpn, err := parseFloat(r.fields[dpnCol]); err == nil && dpn == 1 {
				cross = true
			}
		}
		for i, c := range ops {
			st, res := r.stats(c, c.op)
			if res != statOK {
				continue
			}
			key := recKey{op: ids[i], tp: int32(tp), workers: int32(workers), cross: cross}
			if c.op == spec.OpAllReduce {
				key.tp = int32(workers)
			} else if c.op == spec.OpSendRecv {
				key.tp = 1
			}
			r.emit(key, []float64{size}, st, varPure, phNone, cond)
		}
	}, nil
}
