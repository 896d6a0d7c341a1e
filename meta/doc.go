// Package meta is the Kubernetes wire model that every apikit package shares:
// TypeMeta, ObjectMeta and ListMeta, the Status error body and its
// constructors, label and field selectors, server-side Table, watch events,
// discovery documents, field error lists, and the query options of the REST
// verbs.
//
// The JSON written by these types matches what k8s.io/apimachinery writes, field
// for field and omission rule for omission rule, so kubectl and client-go read
// it unchanged. meta imports nothing else from apikit; every other package sits
// above it.
package meta
