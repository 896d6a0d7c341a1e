package wardleapi

import (
	"github.com/apikit-dev/apikit/core"
	"github.com/apikit-dev/apikit/examples/internal/coregroup"
	"github.com/apikit-dev/apikit/server"
)

// Build is the build function of the wardle server (options.BuildFunc):
// the wardle API with its admission plugin on the server c configures. The
// wardle command runs it, and tests start it in-process with testenv.
func Build(c *server.Config) (*server.GenericServer, error) {
	c.GarbageCollection = true
	return BuildWith(c, false)
}

// BuildWithCore is Build serving the core group too (/api/v1: namespaces,
// configmaps, secrets, serviceaccounts and their tokens, events, and
// leases), as `wardle --core-api` does.
func BuildWithCore(c *server.Config) (*server.GenericServer, error) {
	c.GarbageCollection = true
	return BuildWith(c, true)
}

// BuildWith builds the wardle server, with the core group if withCore, and
// runs a garbage collector over what it serves if c.GarbageCollection
// (`wardle --enable-garbage-collector`, on by default in Build and
// BuildWithCore).
func BuildWith(c *server.Config, withCore bool) (*server.GenericServer, error) {
	api, err := New(c.Storage)
	if err != nil {
		return nil, err
	}
	var coreAPI *core.API
	if withCore {
		// Flunders too are created only in namespaces that exist and are
		// not terminating.
		if coreAPI, err = coregroup.New(c); err != nil {
			return nil, err
		}
	}
	c.Admission = append(c.Admission, api.BanFlunder())
	completed, err := c.Complete()
	if err != nil {
		return nil, err
	}
	srv, err := completed.New("wardle", server.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	group, err := api.GroupInfo()
	if err != nil {
		return nil, err
	}
	if err := srv.InstallAPIGroup(group); err != nil {
		return nil, err
	}
	if coreAPI != nil {
		if err := coreAPI.Install(srv); err != nil {
			return nil, err
		}
	}
	if err := coregroup.InstallGarbageCollector(c, srv); err != nil {
		return nil, err
	}
	return srv, nil
}
