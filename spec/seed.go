package spec

// DefaultSeed is the seed of every random choice when --seed is not given
// (workload draws, synthetic noise, MoE routing in collect, CV folds and
// bootstrap samples, trace generation): one default for every command, so
// the same command line gives the same bytes in every stage.
const DefaultSeed uint64 = 1
