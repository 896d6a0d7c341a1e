// Package fieldmanager keeps the managedFields of objects and merges
// server-side apply patches, as k8s.io/apiserver's field manager does, with
// sigs.k8s.io/structured-merge-diff on the schemas of package schema.
//
// Every write records who set which fields: create, update and the patch
// types record an Update entry for their manager (the fieldManager option,
// else the first part of the User-Agent), server-side apply an Apply entry.
// An apply merges the applied configuration into the live object, taking
// ownership of the fields it names and removing those it applied before and
// no longer names; fields another manager owns with a different value are
// conflicts (409) unless forced. It sits between server/endpoints, which
// calls it inside each write, and package schema. See docs/apply.md.
package fieldmanager
