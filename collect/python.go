package collect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// FindPython returns a Python interpreter that imports torch, and torch's
// version. explicit (--python) is the only candidate when set; otherwise
// $FTK_PYTHON, python3 on the PATH and /usr/bin/python3 (where Debian's
// python3-torch installs) are tried in that order.
func FindPython(ctx context.Context, explicit string) (path, torchVersion string, err error) {
	cands := []string{explicit}
	if explicit == "" {
		cands = []string{os.Getenv("FTK_PYTHON"), "python3", "/usr/bin/python3"}
	}
	var tried []string
	seen := map[string]bool{}
	for _, c := range cands {
		if c == "" {
			continue
		}
		p, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: not found", c))
			continue
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		v, err := probeTorch(ctx, p)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		return p, v, nil
	}
	return "", "", fmt.Errorf("no Python with torch found (%s): install PyTorch (Debian: apt-get install python3-torch) or pass --python", strings.Join(tried, "; "))
}

func probeTorch(ctx context.Context, python string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", "import torch; print(torch.__version__)").CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				msg = ee.String()
			} else {
				msg = err.Error()
			}
		}
		return "", fmt.Errorf("%s", msg)
	}
	return strings.TrimSpace(string(out)), nil
}
