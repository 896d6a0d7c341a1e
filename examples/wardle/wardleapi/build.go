package wardleapi

import "github.com/apikit-dev/apikit/server"

// Build is the build function of the wardle server (options.BuildFunc):
// the wardle API with its admission plugin on the server c configures. The
// wardle command runs it, and tests start it in-process with testenv.
func Build(c *server.Config) (*server.GenericServer, error) {
	api, err := New(c.Storage)
	if err != nil {
		return nil, err
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
	return srv, srv.InstallAPIGroup(group)
}
