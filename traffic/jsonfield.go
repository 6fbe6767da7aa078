package traffic

import (
	"encoding/json"
	"errors"
	"strings"
)

// jsonField finds the member key of the JSON object in b, one line of a JSONL log, without decoding the rest
// of it: the value's text (a string unquoted, anything else as written) and whether the object has the key.
// With wantKeys it also lists the object's keys (to name them when the key is missing). A line that is not one
// JSON object is an error.
func jsonField(b []byte, key string, wantKeys bool) (value string, found bool, keys []string, err error) {
	if !json.Valid(b) {
		return "", false, nil, errors.New("not a JSON object")
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", false, nil, errors.New("not a JSON object")
	}
	i++
	for {
		i = skipSpace(b, i)
		if b[i] == '}' {
			return value, found, keys, nil
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := stringEnd(b, i)
		name := b[i:end]
		var k string
		if strings.IndexByte(string(name), '\\') >= 0 {
			if err := json.Unmarshal(name, &k); err != nil {
				return "", false, nil, err
			}
		} else {
			k = string(name[1 : len(name)-1])
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the colon
		vend := valueEnd(b, i)
		if wantKeys {
			keys = append(keys, k)
		}
		if k == key && !found {
			found = true
			raw := b[i:vend]
			if raw[0] == '"' {
				if strings.IndexByte(string(raw), '\\') >= 0 {
					if err := json.Unmarshal(raw, &value); err != nil {
						return "", false, nil, err
					}
				} else {
					value = string(raw[1 : len(raw)-1])
				}
			} else {
				value = string(raw)
			}
			if !wantKeys {
				return value, true, nil, nil
			}
		}
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string starting at b[i] (b is valid JSON).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd is the index after the JSON value starting at b[i] (b is valid JSON).
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return len(b)
	}
}
