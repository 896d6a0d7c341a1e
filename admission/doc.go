// Package admission runs mutating and validating checks on writes after
// authorization and before storage. Plugins see the object in the storage
// version, the old object on updates, and who is asking; an error refuses the
// write (a Forbidden Status unless the plugin returns a Status of its own).
package admission
