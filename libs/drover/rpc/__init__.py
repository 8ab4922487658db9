"""gRPC plumbing shared by every drover service: one way to build a server,
one mapping of errors to status codes, interceptors, channels."""
