"""Runtime: how the product's code runs (Ray, ONNX Runtime and the encoder, tracing and logs, safe regex and AST)."""
