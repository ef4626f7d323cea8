package collect

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// workerScript is collect/worker/ftk_worker.py, shipped inside the ftk
// binary so a worker can start wherever ftk runs.
//
//go:embed worker/ftk_worker.py
var workerScript []byte

// workerPath writes the embedded worker script to the temp folder (once
// per content) and returns its path.
func workerPath() (string, error) {
	sum := sha256.Sum256(workerScript)
	path := filepath.Join(os.TempDir(), "ftk-worker-"+hex.EncodeToString(sum[:6])+".py")
	if data, err := os.ReadFile(path); err == nil && string(data) == string(workerScript) {
		return path, nil
	}
	tmp, err := os.CreateTemp(os.TempDir(), "ftk-worker-*.py")
	if err != nil {
		return "", fmt.Errorf("writing the torch worker script: %w", err)
	}
	if _, err := tmp.Write(workerScript); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing the torch worker script: %w", err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing the torch worker script: %w", err)
	}
	return path, nil
}
