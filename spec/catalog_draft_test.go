package spec

import "testing"

// Llama-3.2-1B, a draft model of the catalog, has the 1.23B parameters its
// model card states (its embeddings tied to the LM head) and is found by
// its Hugging Face id, as a --speculative-config names it.
func TestCatalogLlama32_1B(t *testing.T) {
	m, err := LookupModel("meta-llama/Llama-3.2-1B")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "llama-3.2-1b" {
		t.Errorf("meta-llama/Llama-3.2-1B resolves to %q, want llama-3.2-1b", m.Name)
	}
	total, _ := m.Params()
	if b := float64(total) / 1e9; !within(b, 1.23, 0.01) {
		t.Errorf("Llama-3.2-1B: %.3fB parameters, the model card states 1.23B", b)
	}
}
