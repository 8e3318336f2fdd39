"""The HTTP API: routes, guards, admission, errors, request models, metrics, feedback."""
