package collect

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ftk-dev/ftk/atomicfile"
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
	err := atomicfile.Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(workerScript)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("writing the torch worker script: %w", err)
	}
	return path, nil
}
