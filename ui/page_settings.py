"""The settings a page runs with: the environment's and secrets', with the sidebar's registry choice."""
from __future__ import annotations

import streamlit as st

from core.registries import registries
from core.settings import Settings


def base_settings() -> Settings:
    """Settings from the environment and secrets; raises ValueError for a bad setting (app.py shows it)."""
    return Settings.from_env()


def current_settings() -> Settings:
    """The environment's settings with the sidebar's registry choice applied."""
    settings = base_settings()
    # Before the sidebar's widget exists in a session (app.py starts the index first), the URL has the choice.
    registry = st.session_state.get("registry") or st.query_params.get("registry") or settings.registry
    if registry not in {r.name for r in registries(settings.root)}:
        registry = settings.registry
    return settings if registry == settings.registry else settings.with_(registry=registry)


SIDEBAR_KEYS = ("registry", "gold", "k_default", "study")
DEFAULT_STUDY = "default"  # the sidebar's default study (core.analysis.store_summary.DEFAULT_STUDY_RULE)


def chosen_study() -> str | None:
    """The sidebar's study: a system ("offline", "local:<model>", ...) or None for the declared default rule."""
    value = st.session_state.get("study") or st.query_params.get("study") or DEFAULT_STUDY
    return None if value in (DEFAULT_STUDY, "latest") else value  # "latest": its name in links shared before


def shared_choices() -> dict[str, str]:
    """The sidebar's choices as the URL carries them (a choice at its default is not in the URL)."""
    return {key: st.query_params[key] for key in SIDEBAR_KEYS if key in st.query_params}
