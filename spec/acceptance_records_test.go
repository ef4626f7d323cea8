package spec

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every method ftk simulates has at least one built-in acceptance record,
// so a run that names only its method has a sourced default, and every
// record's source is dated (a year) as the guide asks of public figures.
func TestEveryMethodHasAcceptanceRecord(t *testing.T) {
	recs, err := AcceptanceRecords()
	if err != nil {
		t.Fatal(err)
	}
	year := regexp.MustCompile(`\b20[0-9][0-9]\b`)
	have := map[string]int{}
	for _, r := range recs {
		have[r.Method]++
		if !year.MatchString(r.Source) {
			t.Errorf("%s: source %q gives no date", r.Name, r.Source)
		}
	}
	for _, m := range SpecMethods {
		if have[m] == 0 {
			t.Errorf("no acceptance record for method %s: add one (spec/speculative/<name>.yaml) with its public source", m)
		}
		if _, err := LookupAcceptance(m, "", "llama-3.1-8b", 1); err != nil {
			t.Errorf("method %s: no default for llama-3.1-8b at K=1: %v", m, err)
		}
	}
}

// docs/speculative.md lists every built-in acceptance record by name, so
// the page and the records cannot drift apart.
func TestSpeculativeDocListsEveryRecord(t *testing.T) {
	recs, err := AcceptanceRecords()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/speculative.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if !strings.Contains(string(doc), "`"+r.Name+"`") {
			t.Errorf("docs/speculative.md does not list acceptance record %s: add a row to its table of records", r.Name)
		}
	}
}
