"""Typed access to the DISPUTA settings dict (its values are of mixed types)."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def conf(name: str) -> Any:
    return settings.DISPUTA[name]
