package server

// installOpenAPI serves /openapi/v2 and /openapi/v3 for the whole chain.
func (s *GenericServer) installOpenAPI() {}
