"""Loading `Config`: the dataclass defaults < a YAML file (`conf/default.yaml` unless another is given) <
environment variables named `SEMANTICA__SECTION__FIELD` < CLI overrides `section.field=value`. Every value is
coerced to its field's annotated type, so a wrong key or value fails here with a one-line `ConfigError`."""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path
from typing import Any

import yaml

from semantica.config.composed import Config
from semantica.errors import ErrorKind

ENV_PREFIX = "SEMANTICA__"
PACKAGE_CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
DEFAULT_CONFIG_FILE = PACKAGE_CONF_DIR / "default.yaml"


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message says which and what to do."""

    error_kind = ErrorKind.INVALID


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Convert a YAML/env value to the annotated type, or raise a clear ConfigError."""
    origin = typing.get_origin(annotation)
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return _build(annotation, value, where)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
            return value.lower() in {"1", "true", "yes", "on"}
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if annotation in (int, float):
        try:
            return annotation(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}") from None
    if annotation is str:  # a null (`key:` in YAML, `--set section.key=`) is the empty string, never 'None'
        return "" if value is None else str(value)
    if origin in (list, dict):
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if origin is list and isinstance(value, list):
            (item_type,) = typing.get_args(annotation)
            return [_coerce(v, item_type, f"{where}[{i}]") for i, v in enumerate(value)]
        if origin is dict and isinstance(value, dict):
            _, value_type = typing.get_args(annotation)
            return {str(k): _coerce(v, value_type, f"{where}.{k}") for k, v in value.items()}
        raise ConfigError(f"{where}: expected a {origin.__name__}, got {value!r}")
    return value


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{where or 'config'}: unknown key(s) {unknown}; known: {sorted(known)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}" if where else k) for k, v in values.items()}
    return cls(**kwargs)


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _dotted_to_nested(dotted: str, value: Any) -> dict[str, Any]:
    parts = [p for p in dotted.split(".") if p]
    if len(parts) < 2:
        raise ConfigError(f"override {dotted!r}: use section.field=value, e.g. faiss.nprobe=16")
    nested: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        nested = {part: nested}
    return nested


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: list[str] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Load defaults < YAML file < SEMANTICA__SECTION__FIELD env < `section.field=value` overrides."""
    config_path = Path(path) if path else Path(os.environ.get("SEMANTICA_CONFIG", DEFAULT_CONFIG_FILE))
    return load_sections(Config, config_path, bool(path), overrides, environ, ENV_PREFIX)


def load_sections(cls: type, config_path: Path, required: bool, overrides: list[str] | None,
                  environ: dict[str, str] | None, env_prefix: str) -> Any:
    """One dataclass tree `cls` from its defaults < `config_path` < `env_prefix`SECTION__FIELD < overrides
    (`Config` and the training jobs' `TrainConfig` load alike); `required`: a missing file is an error."""
    raw: dict[str, Any] = dataclasses.asdict(cls())  # so a partial mapping override keeps the other keys
    if config_path.exists():
        try:
            loaded = yaml.safe_load(config_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{config_path}: the top level must be a mapping of sections")
        raw = _merge(raw, loaded)
    elif required:
        raise ConfigError(f"config file {config_path} does not exist")
    env = os.environ if environ is None else environ
    for key, value in env.items():
        if key.startswith(env_prefix):
            dotted = key[len(env_prefix):].lower().replace("__", ".")
            raw = _merge(raw, _dotted_to_nested(dotted, _yaml_value(value, f"environment variable {key}")))
    for override in overrides or []:
        if "=" not in override:
            raise ConfigError(f"override {override!r}: expected section.field=value")
        dotted, value = override.split("=", 1)
        raw = _merge(raw, _dotted_to_nested(dotted.strip(), _yaml_value(value, f"override {override!r}")))
    return _build(cls, raw, "")


def _yaml_value(text: str, source: str) -> Any:
    """One override's value parsed as YAML; a ConfigError (one line, no traceback) when it is not YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{source}: {text[:80]!r} is not a valid YAML value ({problem}); "
                          "quote strings, e.g. key='[text'") from None


def config_to_dict(config: Config) -> dict[str, Any]:
    """Plain-dict view (for manifests, `--json` output and Ray workers)."""
    return dataclasses.asdict(config)


def config_from_dict(values: dict[str, Any]) -> Config:
    """Inverse of `config_to_dict`."""
    return _build(Config, values, "")


def field_count(cls: type = Config) -> dict[str, int]:
    """Leaf fields per section of a config tree (`Config` unless another), in declaration order: a nested
    dataclass is a section of its own (`planning.retry` apart from `planning`). The budget test reads it."""
    counts: dict[str, int] = {}

    def walk(node: type, section: str) -> None:
        hints = typing.get_type_hints(node)
        for item in dataclasses.fields(node):
            if dataclasses.is_dataclass(hints[item.name]):
                walk(hints[item.name], f"{section}.{item.name}" if section else item.name)
            else:
                counts[section] = counts.get(section, 0) + 1

    walk(cls, "")
    return counts
