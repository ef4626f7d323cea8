package spec

import (
	"strings"
	"testing"
)

// TestHubIDsResolve: every catalog model with a Hugging Face id resolves by
// that id, by its repository name alone and in any case, as by its catalog
// name (meta-llama/Llama-3.1-8B-Instruct failed as a file path while
// Qwen/Qwen3-30B-A3B, an alias, resolved).
func TestHubIDsResolve(t *testing.T) {
	withID := 0
	for _, name := range ModelNames() {
		m, err := LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.HubID == "" {
			continue
		}
		withID++
		repo := m.HubID[strings.LastIndexByte(m.HubID, '/')+1:]
		for _, id := range []string{m.HubID, strings.ToLower(m.HubID), strings.ToUpper(m.HubID), repo} {
			got, err := LookupModel(id)
			if err != nil || got.Name != name {
				t.Errorf("LookupModel(%q): %v, %v; want %s", id, got, err, name)
			}
		}
	}
	if withID < len(ModelNames())-1 { // qwen3-30b-a3b-tiny is Frontier's, not on the hub
		t.Errorf("%d of %d catalog models have a Hugging Face id", withID, len(ModelNames()))
	}
	if _, err := LookupModel("meta-llama/Llama-4-Scout-17B-16E"); err == nil || !strings.Contains(err.Error(), "not in the catalog") {
		t.Errorf("an id outside the catalog: %v, want a not-in-the-catalog error", err)
	}
}
