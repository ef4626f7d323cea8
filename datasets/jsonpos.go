package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// lineCol returns the 1-based line and byte column of offset in data.
func lineCol(data []byte, offset int64) (line, col int) {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// posError returns a *ParseError at offset of data.
func posError(path string, data []byte, offset int64, err error) error {
	line, col := lineCol(data, offset)
	return &ParseError{Path: path, Line: line, Column: col, Err: err}
}

// jsonPosError turns an encoding/json error about data (decoded whole,
// from offset base) into a *ParseError with its line and column; other
// errors pass through.
func jsonPosError(path string, data []byte, err error) error {
	return jsonPosErrorAt(path, data, 0, err)
}

func jsonPosErrorAt(path string, data []byte, base int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bad byte itself: point at it (or at the end
		// when the input ends early).
		off := base + syn.Offset
		if !strings.Contains(syn.Error(), "end of JSON input") {
			off--
		}
		return posError(path, data, off, errors.New(syn.Error()))
	case errors.As(err, &typ):
		// Offset is just past the bad value.
		msg := fmt.Sprintf("cannot use a JSON %s as %s", typ.Value, typ.Type)
		if typ.Field != "" {
			msg = fmt.Sprintf("field %q: %s", typ.Field, msg)
		}
		return posError(path, data, base+typ.Offset, errors.New(msg))
	}
	return err
}
