package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tokenizerTexts are counted with every fixture tokenizer in testdata.
var tokenizerTexts = []string{
	"the cat sat on the mat", "The cat's singing", "  the  cat\n\nsat", "123 12 1234567", "héllo wörld 😀",
	"<|endoftext|>the cat", "the<|endoftext|>cat", "<s>the cat</s> sat", "Hello, World! The cat.",
	"the <|eot|>   cat", "Hello   world  ", "", "\t\r\n x", "cats the cats", "ing ing sing",
}

// TestTokenizerCountsMatchHuggingFace checks the counts of small hand-made
// tokenizer.json files of each supported kind against the counts Hugging
// Face tokenizers 0.22.2 (the Rust library, through its Node binding)
// gives for the same files and texts, with add_special_tokens=false.
func TestTokenizerCountsMatchHuggingFace(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []int
	}{
		// GPT-2 style: ByteLevel pre-tokenizer with its regex, "a b" merges.
		{"tokenizer_bytelevel.json", []int{10, 6, 8, 11, 18, 4, 5, 11, 17, 12, 13, 0, 5, 6, 5}},
		// Llama 2 style: Prepend+Replace normalizer, byte fallback, fused unk.
		{"tokenizer_llama.json", []int{9, 8, 8, 15, 19, 17, 16, 6, 18, 11, 14, 0, 6, 5, 6}},
		// Llama 3 style: NFC, Split regex + ByteLevel, ignore_merges, [a, b]
		// merges, an added token with rstrip.
		{"tokenizer_split.json", []int{13, 13, 7, 9, 18, 16, 17, 13, 18, 6, 13, 0, 5, 5, 12}},
		// WordLevel with Lowercase and Whitespace.
		{"tokenizer_wordlevel.json", []int{6, 5, 3, 3, 3, 5, 5, 9, 7, 5, 2, 0, 1, 3, 3}},
		// Mistral style: Metaspace pre-tokenizer, prepend_scheme "first".
		{"tokenizer_metaspace.json", []int{9, 8, 8, 15, 19, 17, 16, 6, 18, 12, 16, 0, 6, 5, 6}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tok, err := LoadTokenizer(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range tokenizerTexts {
				got, err := tok.Count(text)
				if err != nil {
					t.Fatalf("Count(%q): %v", text, err)
				}
				if got != tc.want[i] {
					t.Errorf("Count(%q) = %d, Hugging Face gives %d", text, got, tc.want[i])
				}
			}
		})
	}
}

// TestPreTokenizerPiecesMatchHuggingFace checks the pre-tokens (the regex
// translation and look-ahead emulation) against Hugging Face's
// pre_tokenize_str on the same fixtures.
func TestPreTokenizerPiecesMatchHuggingFace(t *testing.T) {
	for _, tc := range []struct {
		file, text string
		want       []string
	}{
		{"tokenizer_bytelevel.json", "Hello   world!!  \n\n x", []string{"Hello", "ĠĠ", "Ġworld", "!!", "ĠĠĊĊ", "Ġx"}},
		{"tokenizer_bytelevel.json", "I'M here 12345", []string{"I", "'", "M", "Ġhere", "Ġ12345"}},
		{"tokenizer_bytelevel.json", "a\u00a0b  \u3000c", []string{"a", "Âł", "b", "ĠĠ", "ãĢĢ", "c"}},
		{"tokenizer_split.json", "Hello   world!!  \n\n x", []string{"Hello", "ĠĠ", "Ġworld", "!!", "ĠĠĊĊ", "Ġx"}},
		{"tokenizer_split.json", "I'M here 12345", []string{"I", "'M", "Ġhere", "Ġ", "123", "45"}},
		{"tokenizer_split.json", "a\u00a0b  \u3000c", []string{"a", "Âłb", "ĠĠ", "ãĢĢc"}},
		{"tokenizer_metaspace.json", "Hello   world!!  \n\n x", []string{"▁Hello", "▁", "▁", "▁world!!", "▁", "▁\n\n", "▁x"}},
		{"tokenizer_metaspace.json", "a\u00a0b  \u3000c", []string{"▁a\u00a0b", "▁", "▁\u3000c"}},
		{"tokenizer_wordlevel.json", "I'M here 12345", []string{"I", "'", "M", "here", "12345"}},
		{"tokenizer_wordlevel.json", "a\u00a0b  \u3000c", []string{"a", "b", "c"}},
	} {
		tok, err := LoadTokenizer(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		ps := []piece{{tc.text, true}}
		for _, p := range tok.pre {
			ps = p(ps)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.text)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s %q: pieces %q, Hugging Face gives %q", tc.file, tc.text, got, tc.want)
		}
	}
}

func TestTokenizerRefusesWhatItCannotCount(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path  string
		unsupported bool
		want        string
	}{
		{"unigram", filepath.Join("testdata", "tokenizer_unigram.json"), true, `model type "Unigram"`},
		{"wordpiece", write("wp.json", `{"model": {"type": "WordPiece", "vocab": {}}}`), true, `model type "WordPiece"`},
		{"bert normalizer", write("bn.json", `{"normalizer": {"type": "BertNormalizer"}, "model": {"type": "WordLevel", "vocab": {"a": 0}}}`), true, `normalizer type "BertNormalizer"`},
		{"look-ahead elsewhere", write("la.json", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a(?=b)"}, "behavior": "Isolated"}, "model": {"type": "WordLevel", "vocab": {"a": 0}}}`), true, "does not translate"},
		{"dropout", write("do.json", `{"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}}`), true, "dropout"},
		{"merge out of vocabulary", write("mv.json", `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`), false, `result "ab" not in the vocabulary`},
		{"syntax error", write("se.json", "{\n  \"model\": {\n    \"type\": \"BPE\",,\n  }\n}"), false, "se.json:3:19"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadTokenizer(tc.path)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			if got := errors.Is(err, ErrTokenizerUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(ErrTokenizerUnsupported) = %v, want %v (%v)", got, tc.unsupported, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestWordLevelWithoutUnkFailsOnUnknownWords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "wl.json")
	os.WriteFile(p, []byte(`{"pre_tokenizer": {"type": "WhitespaceSplit"}, "model": {"type": "WordLevel", "vocab": {"a": 0}}}`), 0o644)
	tok, err := LoadTokenizer(p)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tok.Count("a  a\ta"); err != nil || n != 3 {
		t.Errorf("Count(known words) = %d, %v; want 3", n, err)
	}
	if _, err := tok.Count("a b"); err == nil || !strings.Contains(err.Error(), `"b" is not in the vocabulary`) {
		t.Errorf("Count(unknown word) error = %v", err)
	}
}

func BenchmarkTokenizerCount(b *testing.B) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "tokenizer_llama.json"))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The cat sat on the mat, singing 123 héllo. ", 50)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Count(text); err != nil {
			b.Fatal(err)
		}
	}
}
