package cost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// A calibration file holding NaN, an infinity or an absurd figure is
// refused by LoadCalibration with a message naming the file and the field,
// before any run uses it (a NaN host time once ran and then failed to write
// its summary).
func TestLoadCalibrationRejectsNonsense(t *testing.T) {
	for _, tc := range []struct{ yaml, field string }{
		{"host_scale: .nan\n", "host_scale"},
		{"host_scale: .inf\n", "host_scale"},
		{"host_speed: -.inf\n", "host_speed"},
		{"host_ms_per_step: 1e308\n", "host_ms_per_step"},
		{"host_ms_per_step: .nan\n", "host_ms_per_step"},
		{"host_scale: 1e9\n", "host_scale"},
		{"family_scale: {attention: .nan}\n", "family_scale[attention]"},
		{"issue_scale: {triton: .inf}\n", "issue_scale[triton]"},
	} {
		p := filepath.Join(t.TempDir(), "cal.yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runresult.LoadCalibration(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%q: got %v, want an error naming %s and %s", tc.yaml, err, p, tc.field)
		}
	}
	p := filepath.Join(t.TempDir(), "cal.yaml")
	if err := os.WriteFile(p, []byte("host_ms_per_step: 2.5\nhost_scale: 1.3\nfamily_scale: {moe: 1.2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runresult.LoadCalibration(p); err != nil {
		t.Errorf("a usable calibration refused: %v", err)
	}
}
