"""Which backends and models this installation offers, and why one cannot be chosen. Kept free of the SDK
imports (over a second of CPU): a runner imports only the SDK of the backend it actually calls."""

from __future__ import annotations

import os

from debates.agents.pricing import price_table
from debates.platform.conf import conf

OFFICIAL_OPENAI_BASE_URL = "https://api.openai.com/v1"


def anthropic_unavailable_reason() -> str:
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        return "ANTHROPIC_API_KEY is not set in the server's environment."
    return ""


def anthropic_models() -> list[tuple[str, str]]:
    models = [
        (model, f"{entry.get('label', model)} (${entry['input']} in / ${entry['output']} out per M tokens)")
        for model, entry in price_table()["models"].items()
        if entry.get("provider") == "anthropic"
    ]
    default = conf("DEFAULT_MODEL")["anthropic"]
    return sorted(models, key=lambda item: item[0] != default)


def openai_base_url() -> str:
    return conf("OPENAI_BASE_URL") or OFFICIAL_OPENAI_BASE_URL


def openai_unavailable_reason() -> str:
    if not conf("OPENAI_BASE_URL") and not os.environ.get("OPENAI_API_KEY"):
        return "Set OPENAI_BASE_URL (a local server) or OPENAI_API_KEY in the server's environment."
    if not conf("OPENAI_MODELS"):
        return "Name the models to offer in DISPUTA_OPENAI_MODELS (comma-separated)."
    return ""


def openai_models() -> list[tuple[str, str]]:
    return [(model, model) for model in conf("OPENAI_MODELS")]
