package fit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/spec"
)

// TestMain runs the tests, or, in a child process of BenchmarkLoadBundle,
// only a timed bundle load.
func TestMain(m *testing.M) {
	if path := os.Getenv(loadChildEnv); path != "" {
		os.Exit(loadChild(path))
	}
	os.Exit(m.Run())
}

// profiles is the shared fixture folder, relative to this package.
const profiles = "../testdata/profiles"

// datasetCache holds ingested fixture datasets, one per input list.
var datasetCache sync.Map

// ingestFixture ingests the profile files under rel (relative to
// testdata/profiles) into a temporary dataset and loads it back through
// dataset.Load, the path every caller of fit takes.
func ingestFixture(rel ...string) (*dataset.Dataset, error) {
	key := filepath.Join(rel...)
	if v, ok := datasetCache.Load(key); ok {
		return v.(*dataset.Dataset), nil
	}
	var paths []string
	for _, r := range rel {
		paths = append(paths, filepath.Join(profiles, r))
	}
	tmp, err := os.MkdirTemp("", "ftk-fit-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "dataset")
	if _, err := ingest.Ingest(paths, dir, ingest.Options{}); err != nil {
		return nil, err
	}
	ds, err := dataset.Load(dir)
	if err != nil {
		return nil, err
	}
	datasetCache.Store(key, ds)
	return ds, nil
}

// loadProfiles is ingestFixture for tests: a missing fixture fails.
func loadProfiles(t testing.TB, rel ...string) *dataset.Dataset {
	t.Helper()
	ds, err := ingestFixture(rel...)
	if err != nil {
		t.Fatalf("fixture %v: %v", rel, err)
	}
	return ds
}

// fixtureTrainingSet ingests fixture profiles and selects CUDA_EVENT samples.
func fixtureTrainingSet(rel ...string) (*TrainingSet, error) {
	ds, err := ingestFixture(rel...)
	if err != nil {
		return nil, err
	}
	return FromDataset(ds, spec.CUDAEvent)
}

// trainingSet is fixtureTrainingSet for tests.
func trainingSet(t testing.TB, rel ...string) *TrainingSet {
	t.Helper()
	ts, err := fixtureTrainingSet(rel...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
