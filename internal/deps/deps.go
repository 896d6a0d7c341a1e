package deps
import (
 _ "github.com/emicklei/go-restful/v3"
 _ "github.com/emicklei/go-restful-openapi/v2"
 _ "github.com/go-openapi/spec"
 _ "go.etcd.io/etcd/client/v3"
 _ "go.etcd.io/etcd/server/v3/embed"
 _ "github.com/spf13/pflag"
 _ "github.com/spf13/cobra"
 _ "github.com/evanphx/json-patch/v5"
 _ "sigs.k8s.io/yaml"
 _ "github.com/google/uuid"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/go-jose/go-jose/v4"
 _ "golang.org/x/net/http2"
)
