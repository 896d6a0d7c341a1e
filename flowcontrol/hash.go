package flowcontrol

// flowHash hashes a flow's identity (its schema and distinguisher) to 64
// well-mixed bits, without allocating: FNV-1a, then the splitmix64
// finalizer, since shuffle sharding reads the high bits too.
func flowHash(schema, distinguisher string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(schema); i++ {
		h = (h ^ uint64(schema[i])) * prime
	}
	h = (h ^ 0) * prime // separator
	for i := 0; i < len(distinguisher); i++ {
		h = (h ^ uint64(distinguisher[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
