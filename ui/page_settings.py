"""The settings a page runs with: the environment's and secrets', with the sidebar's registry choice."""
from __future__ import annotations

import streamlit as st

from core.settings import Settings


def base_settings() -> Settings:
    """Settings from the environment and secrets; raises ValueError for a bad setting (app.py shows it)."""
    return Settings.from_env()


def current_settings() -> Settings:
    """The environment's settings with the sidebar's registry choice applied."""
    settings = base_settings()
    registry = st.session_state.get("registry", settings.registry)
    return settings if registry == settings.registry else settings.with_(registry=registry)
