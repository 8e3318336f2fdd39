"""The one `Config`, composed from the areas' settings the way ColBERT composes `ColBERTConfig` from its
`*Settings` dataclasses: each area module owns its sections and lists them in one `*Settings` class, and
`Config` inherits them all, so `config.faiss.nprobe` stays one attribute away whichever area holds it."""

from __future__ import annotations

from dataclasses import dataclass

from semantica.config.history import HistorySettings
from semantica.config.index import IndexSettings
from semantica.config.localizer import LocalizerSettings
from semantica.config.ops import OpsSettings
from semantica.config.planning import PlanningSettings
from semantica.config.query import QuerySettings
from semantica.config.serve import ServeSettings

AREAS: tuple[type, ...] = (IndexSettings, QuerySettings, LocalizerSettings, ServeSettings, OpsSettings,
                           PlanningSettings, HistorySettings)
"""The areas in the order their sections appear in conf/default.yaml and in `config_to_dict`."""


@dataclass
class Config(HistorySettings, PlanningSettings, OpsSettings, ServeSettings, LocalizerSettings, QuerySettings,
             IndexSettings):
    """Everything, composed. The bases are `AREAS` reversed: a dataclass collects fields from its last base
    first, so the sections keep the order of conf/default.yaml."""
