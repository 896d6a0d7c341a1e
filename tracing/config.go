package tracing

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// DefaultEndpoint is where spans go when the configuration names no
// endpoint: the OTLP gRPC port on the local host, as kube-apiserver.
const DefaultEndpoint = "localhost:4317"

// Configuration is kube-apiserver's TracingConfiguration
// (apiserver.config.k8s.io/v1, v1beta1 or v1alpha1), the content of
// --tracing-config-file.
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Endpoint is the OTLP gRPC collector, host:port; the connection is
	// not encrypted, as kube-apiserver's. Empty means DefaultEndpoint.
	Endpoint *string `json:"endpoint,omitempty"`
	// SamplingRatePerMillion is how many of a million requests without a
	// sampled parent are sampled; unset or 0 samples none (a sampled parent
	// is still followed).
	SamplingRatePerMillion *int32 `json:"samplingRatePerMillion,omitempty"`
}

// ReadConfigurationFile reads and validates a TracingConfiguration file
// (YAML or JSON).
func ReadConfigurationFile(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tracing configuration: %w", err)
	}
	return ParseConfiguration(data)
}

// ParseConfiguration decodes and validates a TracingConfiguration; unknown
// fields are refused, so a misspelt key is not silently ignored.
func ParseConfiguration(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &c); err != nil {
		return nil, fmt.Errorf("decoding tracing configuration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the configuration as kube-apiserver does.
func (c *Configuration) Validate() error {
	switch c.APIVersion {
	case "apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1":
	default:
		return fmt.Errorf("tracing configuration: apiVersion %q is not apiserver.config.k8s.io/v1, v1beta1 or v1alpha1", c.APIVersion)
	}
	if c.Kind != "TracingConfiguration" {
		return fmt.Errorf("tracing configuration: kind %q is not TracingConfiguration", c.Kind)
	}
	if r := c.SamplingRatePerMillion; r != nil {
		if *r < 0 {
			return fmt.Errorf("samplingRatePerMillion: Invalid value: %d: sampling rate must be positive", *r)
		}
		if *r > 1000000 {
			return fmt.Errorf("samplingRatePerMillion: Invalid value: %d: sampling rate per million must be less than or equal to one million", *r)
		}
	}
	if e := c.Endpoint; e != nil {
		return validateEndpoint(*e)
	}
	return nil
}

// validateEndpoint accepts what gRPC can dial, as kube-apiserver: host:port
// (dns), or a dns://, unix:// or unix-abstract: target.
func validateEndpoint(endpoint string) error {
	if !strings.Contains(endpoint, "//") {
		endpoint = "dns://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint: Invalid value: %q: %v", endpoint, err)
	}
	switch u.Scheme {
	case "dns", "unix", "unix-abstract":
		return nil
	}
	return fmt.Errorf("endpoint: Invalid value: %q: unsupported scheme: %v.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md", endpoint, u.Scheme)
}

func (c *Configuration) endpoint() string {
	if c.Endpoint == nil || *c.Endpoint == "" {
		return DefaultEndpoint
	}
	return *c.Endpoint
}

func (c *Configuration) ratio() float64 {
	if c.SamplingRatePerMillion == nil {
		return 0
	}
	return float64(*c.SamplingRatePerMillion) / 1e6
}
