// Package k8sproto reads the Kubernetes protobuf encoding of the built-in
// kinds apikit serves, which client-go's typed clients, and so kubectl and
// operators, post as protobuf: the "k8s\x00" magic, the runtime.Unknown
// envelope, and the messages' fields by number, as in k8s.io/api's
// generated.proto files. A Decoder turns them into JSON by the protobuf
// tags of the Go type a kind decodes into, so that the server decodes and
// validates as it does for JSON.
package k8sproto

import "google.golang.org/protobuf/encoding/protowire"

// magic starts every Kubernetes protobuf body.
var magic = []byte("k8s\x00")

// message is one parsed protobuf message: each field's values, in order,
// as raw bytes (length-delimited fields) or varints. The envelope, a
// timestamp and a RawExtension are read through it; objects are read by
// their Go types (Decoder).
type message struct {
	bytes   map[protowire.Number][][]byte
	varints map[protowire.Number][]uint64
}

// parse parses a message.
func parse(b []byte) (message, error) {
	m := message{bytes: map[protowire.Number][][]byte{}, varints: map[protowire.Number][]uint64{}}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			m.bytes[num] = append(m.bytes[num], v)
			b = b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			m.varints[num] = append(m.varints[num], v)
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return m, nil
}

// last returns the last value of length-delimited field n, nil when it
// is absent.
func (m message) last(n protowire.Number) []byte {
	if v := m.bytes[n]; len(v) > 0 {
		return v[len(v)-1]
	}
	return nil
}

// int64 returns the last value of int64 field n, 0 when it is absent.
func (m message) int64(n protowire.Number) int64 {
	if v := m.varints[n]; len(v) > 0 {
		return int64(v[len(v)-1])
	}
	return 0
}

// zeroTimeSeconds is Go's zero time in Unix seconds, which apimachinery
// reads back as the zero time.
const zeroTimeSeconds = -62135596800
