"""The Ray Serve graph: the deployments and the proxies that answer the stages remotely."""
