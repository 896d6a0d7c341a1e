// Package k8sprototest writes Kubernetes protobuf bodies by field number,
// for the tests and fuzz seeds of the decoders built on package k8sproto.
package k8sprototest

import "google.golang.org/protobuf/encoding/protowire"

// Envelope wraps an object's message as client-go sends it: the "k8s\x00"
// magic, then a runtime.Unknown with the TypeMeta (1: apiVersion 1, kind
// 2) and the raw object (2).
func Envelope(apiVersion, kind string, object []byte) []byte {
	tm := Bytes(Bytes(nil, 1, []byte(apiVersion)), 2, []byte(kind))
	return append([]byte("k8s\x00"), Bytes(Bytes(nil, 1, tm), 2, object)...)
}

// Bytes appends length-delimited field n (a string, bytes or a message).
func Bytes(b []byte, n protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// Varint appends varint field n (an integer or a bool).
func Varint(b []byte, n protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// Timestamp is a meta/v1 Time or MicroTime message.
func Timestamp(seconds, nanos int64) []byte { return Varint(Varint(nil, 1, seconds), 2, nanos) }

// ZeroTime is what client-go writes for an unset Time or MicroTime: an
// empty message (apimachinery's Time.Marshal writes nothing for the zero
// time), not a Timestamp of 0 s.
var ZeroTime = []byte{}

// GoZeroTime is Go's zero time as a Timestamp, in Unix seconds, which
// apimachinery also reads as unset.
var GoZeroTime = Timestamp(-62135596800, 0)
