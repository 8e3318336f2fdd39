"""Make the configured encoders' ONNX exports now (`make install` runs it): the entry point over
`semantica.runtime.onnx_export`, apart from it because it needs the encoder, which needs the export."""

from __future__ import annotations

import argparse

from semantica.config import load_config
from semantica.encoder_identity import Runtime
from semantica.runtime.encoder import EncoderLoadError, encoder_identity
from semantica.runtime.onnx_export import ExportError
from semantica.stores.localizer.dense import channel_encoder_config


def main(argv: list[str] | None = None) -> int:
    """`python -m semantica.runtime.export_encoders [--set section.field=value]`: make the configured encoders' exports now (the
    index encoder's and the dense function channel's, `localizer.dense_model`; `make install` runs it), so the first
    query or build of a fresh install loads a graph instead of importing torch."""
    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0] if main.__doc__ else None)
    parser.add_argument("--config", default=None, help="YAML config (default: conf/default.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="section.field=value")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.overrides)
    if Runtime.parse(config.encoder.runtime) is Runtime.TORCH:
        print(f"encoder.runtime is {config.encoder.runtime!r}: nothing to export")
        return 0
    encoders = [config.encoder]
    if config.localizer.enabled and config.localizer.dense_model:
        encoders.append(channel_encoder_config(config.localizer, config.encoder))
    for encoder in encoders:
        try:
            model_id, _ = encoder_identity(encoder)
        except (ExportError, EncoderLoadError) as exc:
            print(f"error: {exc}")
            return 1
        print(f"ONNX export ready: {model_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
