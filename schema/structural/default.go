package structural

import "github.com/apikit-dev/apikit/schema"

// Default fills in value, in place, the defaults s declares, as
// apiextensions-apiserver's structural defaulting does on every write and
// every read from storage: a property that is missing, or null where its
// schema is not nullable, gets a copy of its default; then every property,
// additional property and item is defaulted in turn. A null item or map
// value where the schema is not nullable takes its schema's default.
// Defaults are not descended into: kube checks at CRD creation that they
// are already complete. Run Prune first, as kube-apiserver does.
func Default(s *schema.Schema, value any) {
	if s == nil {
		return
	}
	switch t := value.(type) {
	case map[string]any:
		for _, p := range s.Properties {
			if p.Schema.Default == nil {
				continue
			}
			if v, ok := t[p.Name]; !ok || (v == nil && !p.Schema.Nullable) {
				t[p.Name] = normalize(p.Schema.Default)
			}
		}
		for k, v := range t {
			if prop, ok := s.Property(k); ok {
				Default(prop, v)
			} else if ap := s.AdditionalProperties; ap != nil {
				if v == nil && !ap.Nullable && ap.Default != nil {
					t[k] = normalize(ap.Default)
				}
				Default(ap, t[k])
			}
		}
	case []any:
		if s.Items == nil {
			return
		}
		for i, v := range t {
			if v == nil && !s.Items.Nullable && s.Items.Default != nil {
				t[i] = normalize(s.Items.Default)
			}
			Default(s.Items, t[i])
		}
	}
}
