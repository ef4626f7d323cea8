package datasets

import (
	"fmt"
	"os"
	"path/filepath"
)

// SharedEnv is the environment variable that overrides the shared
// directory.
const SharedEnv = "FTK_SHARED"

// SharedDir returns the folder holding the shared fixtures (traces/,
// profiles/, models/), looking in order at
//
//  1. $FTK_SHARED, when set;
//  2. the fixtures of the module (the folder with go.mod) that holds the
//     working directory: its testdata/ folder, else a shared/ folder
//     beside it (returned relative to the working directory);
//  3. the same beside the module root that holds the running executable,
//     so that a checkout's bin/ftk finds it from any working directory.
//
// A shared folder counts when it holds traces/ or profiles/. The command
// line's --shared flag, where a command has one, comes before all of these
// (ParseWorkloadIn). When none is found the error says where it looked and
// what to do.
func SharedDir() (string, error) {
	if d := os.Getenv(SharedEnv); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err == nil {
		if d, ok := findShared(wd); ok {
			if rel, err := filepath.Rel(wd, d); err == nil {
				return rel, nil
			}
			return d, nil
		}
	}
	exe, err := os.Executable()
	if err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if d, ok := findShared(filepath.Dir(exe)); ok {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("no shared fixtures folder (shared/ holding traces/ or profiles/ beside the repository) found from %s or from the ftk executable %s: set $%s to it, pass --shared DIR where the command has it, or run ftk from inside the checkout", wd, exe, SharedEnv)
}

// findShared walks up from dir (absolute) to the module roots above it and
// returns the first shared folder beside one that holds traces/ or
// profiles/.
func findShared(dir string) (string, bool) {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			for _, d := range []string{filepath.Join(dir, "testdata"), filepath.Join(filepath.Dir(dir), "shared")} {
				for _, sub := range []string{"traces", "profiles"} {
					if st, err := os.Stat(filepath.Join(d, sub)); err == nil && st.IsDir() {
						return d, true
					}
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
