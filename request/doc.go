// Package request describes what an HTTP request asks of an API server: the
// verb, API group and version, resource, namespace, name and subresource
// (RequestInfo), parsed once by the server's request-info filter and read by
// authorization, flow control, admission and audit from the context.
package request
