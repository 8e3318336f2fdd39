"""The query path as a declared list of stages: each stage reads and writes one `QueryState` (state.py), and
the registry (registry.py) names them in order. `SearchPipeline._search` runs the list; a feature is a
stage class, one registry line and its conf section, and the stage itself decides whether it applies."""
