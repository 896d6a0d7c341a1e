package etcd3_test

import (
	"context"
	"log"
	"time"

	"github.com/apikit-dev/apikit/storage/etcd3"
)

// An apikit server on an external etcd cluster, as kube-apiserver's
// --etcd-servers, --etcd-cafile, --etcd-certfile, --etcd-keyfile and
// --etcd-prefix configure it.
func ExampleDial() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := etcd3.Dial(ctx, etcd3.Config{
		Endpoints:   []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"},
		CAFile:      "/etc/apikit/etcd/ca.crt",
		CertFile:    "/etc/apikit/etcd/client.crt",
		KeyFile:     "/etc/apikit/etcd/client.key",
		DialTimeout: 20 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// One compactor per server; servers sharing the cluster take turns.
	go etcd3.RunCompactor(ctx, client, 5*time.Minute)

	s := etcd3.New(client, etcd3.WithPrefix("/registry"))
	defer s.Close()
	_ = s // hand s to the registry
}
