package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
)

// rawBufferSize is the read buffer of a direct client connection: an
// answer whose head and body fit in it is checked in place (peekPlain).
const rawBufferSize = 16 << 10

// peekPlain reads, without consuming, the answer at the head of br and
// returns the result if it is the plain answer to request id (a 2xx with
// Content-Type application/json and a Content-Length body: plainResult),
// consuming it then. ok false leaves br as it was, for http.ReadResponse:
// any other answer, one larger than the buffer, a head with anything this
// reading would not take as net/http does (chunked, HTTP/1.0, folded or
// repeated lines). closeAfter reports a Connection: close.
func peekPlain(br *bufio.Reader, id string, max int64) (result json.RawMessage, status int, closeAfter, ok bool, err error) {
	if _, err := br.Peek(1); err != nil {
		return nil, 0, false, false, err // nothing came: ReadResponse says the same
	}
	var head []byte
	for {
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			head = buf[:i+2]
			break
		}
		if len(buf) >= br.Size() {
			return nil, 0, false, false, nil
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return nil, 0, false, false, nil // ReadResponse reads it again and fails the same
		}
	}
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || line[9] != '2' || (len(line) > 12 && line[12] != ' ') {
		return nil, 0, false, false, nil
	}
	status, aerr := strconv.Atoi(string(line[9:12]))
	if aerr != nil {
		return nil, 0, false, false, nil
	}
	length := int64(-1)
	var jsonType bool
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 || name[len(name)-1] == ' ' || name[0] == ' ' || name[0] == '\t' {
			return nil, 0, false, false, nil
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, perr := strconv.ParseInt(string(value), 10, 64)
			if length >= 0 || perr != nil || n < 0 || value[0] == '+' {
				return nil, 0, false, false, nil
			}
			length = n
		case asciiEqualFold(name, "Content-Type"):
			if jsonType {
				return nil, 0, false, false, nil
			}
			jsonType = jsonBody(string(value))
			if !jsonType {
				return nil, 0, false, false, nil
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			return nil, 0, false, false, nil
		case asciiEqualFold(name, "Connection"):
			closeAfter = closeAfter || bytes.Contains(bytes.ToLower(value), []byte("close"))
		}
	}
	headLen := len(head) + 2
	if !jsonType || length < 0 || length > max || int64(headLen)+length > int64(br.Size()) {
		return nil, 0, false, false, nil
	}
	all, err := br.Peek(headLen + int(length))
	if err != nil {
		return nil, 0, false, false, nil // cut short: ReadResponse reads it again and fails the same
	}
	res, ok := plainResult(all[headLen:], id)
	if !ok {
		return nil, 0, false, false, nil
	}
	result = append(json.RawMessage(nil), res...)
	_, _ = br.Discard(headLen + int(length))
	return result, status, closeAfter, true, nil
}

// asciiEqualFold reports whether b is s, ASCII letters compared without
// case (as header names are).
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
