package datasets

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

type wantReq struct {
	prompt, output int
	session        string
}

func checkImport(t *testing.T, reqs []spec.Request, want []wantReq) {
	t.Helper()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(reqs), len(want), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		if r.ID != i || r.PromptTokens != w.prompt || r.OutputTokens != w.output || r.Session != ContentID([]byte(w.session)) || !math.IsNaN(r.ArrivalS) {
			t.Errorf("request %d: %+v, want prompt %d output %d session %q, no arrival", i, r, w.prompt, w.output, w.session)
		}
	}
}

// TestImportShareGPT imports the hand-made fixture. Estimated counts are
// ceil(characters/4) of each message; exact counts are those Hugging Face
// tokenizers gives for each message with testdata/tokenizer_wordlevel.json.
// Prompts accumulate the conversation: conv-a's second request is
// human1 + gpt1 + human2.
func TestImportShareGPT(t *testing.T) {
	path := filepath.Join("testdata", "sharegpt_small.json")
	wordLevel, err := LoadTokenizer(filepath.Join("testdata", "tokenizer_wordlevel.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts ShareGPTOptions
		want []wantReq
		skip int
	}{
		{"estimated, all turns", ShareGPTOptions{}, []wantReq{
			{7, 8, "conv-a"}, {7 + 8 + 4, 16, "conv-a"},
			{7 + 1, 2, "conv-b"}, // system message + human
			{4 + 7, 2, "conv-c"}, // two humans in a row; the empty reply is skipped
			{7 + 3, 1, "conv-d"}, // the opening gpt message is history
			{3, 1, "12345"},      // numeric id
		}, 1},
		{"estimated, first turn", ShareGPTOptions{FirstTurnOnly: true}, []wantReq{
			{7, 8, "conv-a"}, {8, 2, "conv-b"}, {11, 2, "conv-c"}, {10, 1, "conv-d"}, {3, 1, "12345"},
		}, 0},
		{"exact, all turns", ShareGPTOptions{Tokenizer: wordLevel}, []wantReq{
			{7, 8, "conv-a"}, {7 + 8 + 5, 15, "conv-a"}, {6 + 1, 2, "conv-b"},
			{2 + 4, 1, "conv-c"}, {6 + 6, 1, "conv-d"}, {2, 1, "12345"},
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs, sum, err := ImportShareGPT(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkImport(t, reqs, tc.want)
			if sum.Conversations != 6 || sum.Requests != len(tc.want) || sum.Skipped != tc.skip || sum.Estimated != (tc.opts.Tokenizer == nil) {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "ünïcödé 😀": 3} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestImportShareGPTBadInput checks that errors name file, line and column.
func TestImportShareGPTBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		line, col  int
		want       string
	}{
		{"syntax error", "[\n {\"id\": \"a\", \"conversations\": [\n  {\"from\": \"human\", \"value\": \"hi\"},,\n ]}\n]", 3, 36, "invalid character ','"},
		{"unknown speaker", "[\n {\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]},\n  {\"id\": \"b\", \"conversations\": [{\"from\": \"robot\", \"value\": \"x\"}]}\n]", 3, 3, `conversation 1: turn 0: unknown speaker "robot"`},
		{"value not text", "[\n {\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": 5}]}\n]", 2, 60, `field "conversations.value": cannot use a JSON number as string`},
		{"not an array", "{\"id\": 1}", 1, 1, "want a JSON array of conversations"},
		{"no conversations field", "[{\"id\": \"a\", \"messages\": []}]", 1, 2, `no "conversations" field`},
		{"no exchange", "[{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"unanswered\"}]}]", 0, 0, "no human->gpt exchange in 1 conversations"},
		{"truncated", "[\n {\"id\": \"a\", \"conversations\": [\n", 3, 1, "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "sg.json", tc.body)
			_, _, err := ImportShareGPT(path, ShareGPTOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Line != tc.line || pe.Column != tc.col || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error %q at %d:%d, want %d:%d and %q", err, pe.Line, pe.Column, tc.line, tc.col, tc.want)
			}
		})
	}
}
