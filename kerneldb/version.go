package kerneldb

import (
	"fmt"
	"strconv"
	"strings"
)

// CompareVersions orders vLLM versions numerically by dotted component
// (0.9.0 < 0.14.0); a non-numeric component compares as text.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y string
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		xi, errx := strconv.Atoi(x)
		yi, erry := strconv.Atoi(y)
		switch {
		case errx == nil && erry == nil:
			if xi != yi {
				if xi < yi {
					return -1
				}
				return 1
			}
		case x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

// Resolution is the file a table has for a requested vLLM version.
type Resolution struct {
	Table     string
	Requested string // the version asked for ("" : the newest)
	Folder    string // the version folder chosen
	Measured  string // the version the rows were measured with (Folder, or where reuse.yaml points)
	Path      string
	// Note says how the folder was chosen when it is not the requested
	// version's own measurement.
	Note string
}

// Resolve picks table's file for vLLM version v. The rule: the folder of
// v itself when there is one; else the newest folder older than v (the
// kernels a release inherits); else, v being older than every folder, the
// oldest one (stated in Note). An empty v takes the newest folder. A
// folder that borrows the table (reuse.yaml) is followed to the version
// it names, a chain of borrowings included.
func (db *DB) Resolve(table, v string) (Resolution, error) {
	var es []Entry
	for _, e := range db.Entries {
		if e.Table == table {
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		return Resolution{}, fmt.Errorf("kernel database %s has no table %s (it has %s)", db.Dir, table, strings.Join(db.Tables(), ", "))
	}
	r := Resolution{Table: table, Requested: v}
	pick := -1
	switch {
	case v == "":
		pick = len(es) - 1
		r.Note = "no vLLM version given: the newest folder"
	default:
		for i, e := range es {
			if CompareVersions(e.Version, v) <= 0 {
				pick = i
			}
		}
		switch {
		case pick < 0:
			pick = 0
			r.Note = fmt.Sprintf("vLLM %s is older than every folder: the oldest, %s", v, es[0].Version)
		case es[pick].Version != v:
			r.Note = fmt.Sprintf("no folder for vLLM %s: the newest older one, %s", v, es[pick].Version)
		}
	}
	e := es[pick]
	r.Folder = e.Version
	for hops := 0; e.Path == ""; hops++ {
		if hops > len(es) {
			return Resolution{}, fmt.Errorf("kernel database %s: reuse.yaml of table %s loops (version %s)", db.Dir, table, r.Folder)
		}
		found := false
		for _, f := range es {
			if f.Version == e.From {
				e, found = f, true
				break
			}
		}
		if !found {
			return Resolution{}, fmt.Errorf("kernel database %s: %s/%s/%s/reuse.yaml borrows table %s from version %s, which has no folder", db.Dir, es[pick].Family, Framework, es[pick].Version, table, e.From)
		}
		note := fmt.Sprintf("folder %s borrows it from %s (reuse.yaml)", r.Folder, e.Version)
		if r.Note == "" {
			r.Note = note
		} else {
			r.Note += "; " + note
		}
	}
	r.Measured, r.Path = e.Version, e.Path
	return r, nil
}
