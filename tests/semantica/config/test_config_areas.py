"""The config package's composition: every section lives in exactly one area, `Config` inherits every area,
the shipped YAML sets every section and loads value for value, and every class is importable from
`semantica.config`."""

from __future__ import annotations

import dataclasses
import inspect

import yaml

import semantica.config as config_package
from semantica.config import AREAS, DEFAULT_CONFIG_FILE, Config, config_to_dict, load_config


def test_each_section_lives_in_exactly_one_area() -> None:
    owners: dict[str, list[str]] = {}
    for area in AREAS:
        for section in dataclasses.fields(area):
            owners.setdefault(section.name, []).append(area.__name__)
    assert {name: areas for name, areas in owners.items() if len(areas) > 1} == {}
    assert [f.name for f in dataclasses.fields(Config)] == list(owners)  # same sections, in the areas' order
    assert Config.__bases__ == tuple(reversed(AREAS))


def test_default_yaml_sets_every_section_and_loads_value_for_value() -> None:
    shipped = yaml.safe_load(DEFAULT_CONFIG_FILE.read_text())
    loaded = config_to_dict(load_config(DEFAULT_CONFIG_FILE, environ={}))
    assert set(shipped) == set(loaded)

    def leaves(tree: dict, trail: tuple[str, ...] = ()):
        for key, value in tree.items():
            if isinstance(value, dict) and value:
                yield from leaves(value, (*trail, key))
            else:
                yield (*trail, key), value

    def lookup(trail: tuple[str, ...]):
        value = loaded
        for key in trail:
            value = value[key]
        return value

    mismatched = {".".join(trail): (value, lookup(trail)) for trail, value in leaves(shipped) if lookup(trail) != value}
    assert mismatched == {}


def test_every_area_class_is_importable_from_the_package() -> None:
    for area in AREAS:
        module = inspect.getmodule(area)
        classes = [name for name, obj in vars(module).items() if inspect.isclass(obj) and obj.__module__ == module.__name__]
        assert classes and all(getattr(config_package, name) is vars(module)[name] for name in classes)
        assert set(classes) <= set(config_package.__all__)
