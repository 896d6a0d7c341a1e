package options

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// ParseWatchCacheSizes parses --watch-cache-sizes entries,
// resource[.group]#size, into sizes per resource, with kube-apiserver's
// messages for malformed entries (each names the entry).
func ParseWatchCacheSizes(entries []string) (map[meta.GroupResource]int, error) {
	sizes := make(map[meta.GroupResource]int, len(entries))
	for _, c := range entries {
		tokens := strings.Split(c, "#")
		if len(tokens) != 2 {
			return nil, fmt.Errorf("invalid value of watch cache size: %s", c)
		}
		size, err := strconv.Atoi(tokens[1])
		if err != nil {
			return nil, fmt.Errorf("invalid size of watch cache size: %s", c)
		}
		if size < 0 {
			return nil, fmt.Errorf("watch cache size cannot be negative: %s", c)
		}
		sizes[parseGroupResource(tokens[0])] = size
	}
	return sizes, nil
}

// WriteWatchCacheSizes writes sizes back as --watch-cache-sizes entries,
// sorted, so that ParseWatchCacheSizes(WriteWatchCacheSizes(m)) is m.
func WriteWatchCacheSizes(sizes map[meta.GroupResource]int) ([]string, error) {
	entries := make([]string, 0, len(sizes))
	for resource, size := range sizes {
		if size < 0 {
			return nil, fmt.Errorf("watch cache size cannot be negative for resource %s", resource)
		}
		entries = append(entries, fmt.Sprintf("%s#%d", resource.String(), size))
	}
	sort.Strings(entries)
	return entries, nil
}

// parseGroupResource reads "resource.group" or "resource" (the core
// group), as schema.ParseGroupResource does: the group starts at the first
// dot.
func parseGroupResource(s string) meta.GroupResource {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return meta.GroupResource{Group: s[i+1:], Resource: s[:i]}
	}
	return meta.GroupResource{Resource: s}
}
