package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestReaderSplitsMessages(t *testing.T) {
	msgs := []string{
		`{"id":1,"result":{"T":{"u":{"initial":{"name":"a } ] \" {"}}}},"error":null}`,
		`{"method":"update2","params":["m",{"T":{"u":{"modify":{"s":["set",[]]}}}}],"id":null}`,
		`{"id":"echo","method":"echo","params":[]}`,
		`{"x":"\\\\","y":"\\"}`,
		`{}`,
	}
	stream := " \n" + strings.Join(msgs, "") + "\n" + msgs[0] + "\r\n\t" + msgs[2]
	want := append(append([]string{}, msgs...), msgs[0], msgs[2])
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(stream),
		"byte a time": iotest.OneByteReader(strings.NewReader(stream)),
		"half":        iotest.HalfReader(strings.NewReader(stream)),
	} {
		rd := NewReader(r)
		var got []string
		for {
			m, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, string(m))
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
}

func TestReaderLargeMessageThenSmall(t *testing.T) {
	big := `{"id":1,"result":"` + strings.Repeat("x", 3*keepBuffer) + `"}`
	rd := NewReader(strings.NewReader(big + `{"id":2}`))
	m, err := rd.Next()
	if err != nil || len(m) != len(big) {
		t.Fatalf("the large message: %d bytes, %v", len(m), err)
	}
	if m, err = rd.Next(); err != nil || string(m) != `{"id":2}` {
		t.Fatalf("the next one: %q, %v", m, err)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("at the end: %v, want EOF", err)
	}
	if cap(rd.buf) > keepBuffer {
		t.Errorf("kept a %d-byte buffer after the large message", cap(rd.buf))
	}
}

func TestReaderErrors(t *testing.T) {
	for in, want := range map[string]error{
		`{"id":1`:           io.ErrUnexpectedEOF,
		`[1]`:               ErrNotObject,
		`{} x`:              ErrNotObject,
		`{"id":1}` + "\x00": ErrNotObject,
	} {
		rd := NewReader(bytes.NewReader([]byte(in)))
		var err error
		for err == nil {
			_, err = rd.Next()
		}
		if !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", in, err, want)
		}
	}
}

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Message
	}{
		{`{"id":3,"result":{"T":{}},"error":null}`, Message{ID: 3.0, Result: []byte(`{"T":{}}`)}},
		{`{"id":null,"method":"update2","params":["m", {}]}`, Message{Method: "update2", Params: []byte(`["m", {}]`)}},
		{`{"id":"echo","method":"echo","params":[]}`, Message{ID: "echo", Method: "echo", Params: []byte(`[]`)}},
		{`{"id":4,"result":null,"error":{"error":"unknown method"},"extra":[1]}`, Message{ID: 4.0, Result: []byte(`null`), Error: map[string]any{"error": "unknown method"}}},
	} {
		got, err := ParseMessage([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, d)
		}
	}
	for _, in := range []string{`{"method":1}`, `{"id":1,"result":{]}`, `[]`, `{"id":1} 2`, `{"params":"\x01"}`} {
		if _, err := ParseMessage([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestEchoReply(t *testing.T) {
	for _, tc := range []struct{ req, want string }{
		{`{"id":"echo","method":"echo","params":[]}`, `{"error":null,"id":"echo","result":[]}`},
		{`{"id":7,"method":"echo","params":["x",1]}`, `{"error":null,"id":7,"result":["x",1]}`},
		{`{"id":7,"method":"echo"}`, `{"error":null,"id":7,"result":[]}`},
	} {
		msg, err := ParseMessage([]byte(tc.req))
		if err != nil {
			t.Fatal(err)
		}
		got, err := EchoReply(msg)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.req, got, err, tc.want)
		}
	}
}
