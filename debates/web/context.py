"""Template context on every page: the "Needs you" count of the nav (counted only when a template shows it)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from debates.selectors.inbox import needs_you_count


def needs_you(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"needs_you_count": SimpleLazyObject(lambda: needs_you_count(user))}
