"""Loading `Config`: the dataclass defaults < a YAML file (`conf/default.yaml` unless another is given) <
environment variables named `SEMANTICA__SECTION__FIELD` < CLI overrides `section.field=value`. Every value is
coerced to its field's annotated type, so a wrong key or value fails here with a one-line `ConfigError`."""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from pathlib import Path
from typing import Any

import yaml

from semantica.config.composed import Config
from semantica.config.errors import ConfigError

ENV_PREFIX = "SEMANTICA__"
PACKAGE_CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
DEFAULT_CONFIG_FILE = PACKAGE_CONF_DIR / "default.yaml"
CONFIG_ENV = "SEMANTICA_CONFIG"
MAX_CONFIG_BYTES = 1 << 20
"""A config file past this is refused before it is parsed (`--config /dev/zero` ran out of memory)."""
MAX_CONFIG_NODES = 100_000
"""Values (scalars, list items, mapping entries) a loaded config may expand to: a YAML alias bomb is a few
bytes of text and billions of values once its aliases are followed."""


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
        if isinstance(value, (bool, list, dict)) or (annotation is int and isinstance(value, float)
                                                      and not value.is_integer()):
            raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}")
        try:
            number = annotation(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return number
    if annotation is str:  # a null (`key:` in YAML, `--set section.key=`) is the empty string, never 'None'
        if isinstance(value, (list, dict)):
            raise ConfigError(f"{where}: expected a string, got a {type(value).__name__} {str(value)[:80]}; "
                              "quote it to mean the text")
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
    named = path or os.environ.get(CONFIG_ENV)
    config_path = Path(named) if named else DEFAULT_CONFIG_FILE
    return load_sections(Config, config_path, bool(named), overrides, environ, ENV_PREFIX,
                         "" if path else f" (from {CONFIG_ENV})")


def load_sections(cls: type, config_path: Path, required: bool, overrides: list[str] | None,
                  environ: dict[str, str] | None, env_prefix: str, source: str = "") -> Any:
    """One dataclass tree `cls` from its defaults < `config_path` < `env_prefix`SECTION__FIELD < overrides
    (`Config` and the training jobs' `TrainConfig` load alike); `required`: a missing file is an error (`source`
    says where its name came from)."""
    raw: dict[str, Any] = dataclasses.asdict(cls())  # so a partial mapping override keeps the other keys
    if config_path.exists():
        try:
            loaded = _bounded(yaml.safe_load(_read_bounded(config_path)) or {}, str(config_path))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{config_path}: the top level must be a mapping of sections")
        raw = _merge(raw, loaded)
    elif required:
        raise ConfigError(f"config file {config_path}{source} does not exist")
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
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: the value is over {MAX_CONFIG_BYTES} characters")
    try:
        return _bounded(yaml.safe_load(text), source)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{source}: {text[:80]!r} is not a valid YAML value ({problem}); "
                          "quote strings, e.g. key='[text'") from None


def _read_bounded(path: Path) -> str:
    """The file's text, refused past MAX_CONFIG_BYTES without reading the rest (a device never ends)."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES} bytes; a config is a short YAML file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None


def _bounded(value: Any, source: str) -> Any:
    """`value`, refused when it expands past MAX_CONFIG_NODES values (aliases followed; one pass, no recursion)."""
    pending, seen = [value], 0
    while pending:
        item = pending.pop()
        seen += 1
        if seen > MAX_CONFIG_NODES:
            raise ConfigError(f"{source}: expands to over {MAX_CONFIG_NODES} values (YAML aliases?); refused")
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return value


def config_to_dict(config: Config) -> dict[str, Any]:
    """Plain-dict view (for manifests, `--json` output and Ray workers)."""
    return dataclasses.asdict(config)


def config_from_dict(values: dict[str, Any]) -> Config:
    """Inverse of `config_to_dict`."""
    return _build(Config, values, "")


def field_count(cls: type = Config) -> dict[str, int]:
    """Leaf fields per section of a config tree (`Config` unless another), in declaration order: a nested
    dataclass is a section of its own (`planning.decompose` apart from `planning`). The budget test reads it."""
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
