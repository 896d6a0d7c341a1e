// Package admission runs mutating and validating checks on writes after
// authorization and before storage, where kube-apiserver runs them: the
// body is decoded and defaulted (registry.Defaulter), mutating plugins run,
// then the strategy's PrepareForCreate/PrepareForUpdate, its validation,
// the validating plugins, and storage. Plugins see the object in the
// storage version and in the requested version, the old object on updates,
// and who is asking; an error refuses the write (a Forbidden Status unless
// the plugin returns a Status of its own).
package admission
