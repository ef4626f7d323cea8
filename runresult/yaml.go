package runresult

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// DecodeYAML decodes strictly: an unknown key is an error naming its line.
// Errors are one line.
func DecodeYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = unknownField.ReplaceAllString(m, "unknown option $1")
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return err
}
