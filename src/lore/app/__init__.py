"""The application layer: use cases (ask, search) with typed requests and results, shared by the API, the
CLI, MCP and the framework adapters, which stay thin transports over it."""
