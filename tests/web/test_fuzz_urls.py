"""Every URL pattern of the project, walked from the resolver (so a new page is covered without a line here), with
each path parameter replaced by hostile values, hostile query strings and hostile form posts, for an anonymous
visitor, a viewer and a moderator: nothing may answer a server error.

Valid ids point at real objects (a run of every protocol, the demo KBs, proposed KB changes: tests/web/world.py),
so the pages behind a valid URL are fuzzed too, not only the 404s."""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern

from debates.web.forms import RunForm
from tests.web.world import World

pytestmark = pytest.mark.django_db

# Path values: numbers past a signed 64-bit column, zero and negatives, words, unicode, a NUL byte (percent-escaped),
# an empty segment and a very long one.
HOSTILE = [
    str(10**23),
    str(2**63),
    str(2**63 - 1),
    "0",
    "-1",
    "abc",
    "日本語",
    "%00",
    "",
    "x" * 5000,
]
# Query and form values: the same (the NUL raw, the form encoder escapes it) and what numbers, dates and floats
# parsers choke on.
VALUES = [
    str(10**23),
    str(2**63),
    "0",
    "-1",
    "abc",
    "日本語\u202e\x07",
    "\x00",
    "",
    "x" * 5000,
    "9999-12-31",
    "1e400",
    "NaN",
]
# The GET parameters the views read (debates/views*.py, debates/archive.py, kb/views.py).
QUERY_PARAMS = [
    "a",
    "b",
    "page",
    "thread",
    "snapshot",
    "next",
    "q",
    "protocol",
    "status",
    "kb",
    "backend",
    "model",
    "judge_pick",
    "human_pick",
    "verdict",
    "override",
    "date_from",
    "date_to",
    "decision_type",
    "criteria",
    "position",
    "layer",
    "path",
]
# Form fields no page renders under these names but views read; the rest are scraped from the pages (world).
POST_FIELDS = [
    "client_uuid",
    "step_key",
    "approve",
    "decision",
    "pick",
    "reason",
    "budget_usd",
    "budget_tokens",
    "seed",
    "backend",
    "model",
    "upto_key",
    "next",
    "username",
    "password",
    "old_password",
    "new_password1",
    "new_password2",
    "email",
    *RunForm.base_fields,
]
ROLES = ["anonymous", "viewer", "moderator"]
LOGIN_URL = "/accounts/login/"


@dataclass(frozen=True)
class Pattern:
    route: str  # the full route, e.g. "runs/<id:run_id>/"
    name: str
    params: tuple[str, ...]

    def url(self, values: dict[str, str]) -> str:
        """The URL with each parameter replaced (percent-escaped, keeping escapes like %00 as they are)."""
        out = self.route
        for name in self.params:
            value = quote(values[name], safe="%")
            out = re.sub(rf"<(?:[^<>:]+:)?{name}>|\(\?P<{name}>[^()]*\)", lambda _m, v=value: v, out)
        out = out.replace("^", "").replace("$", "")
        assert not re.search(r"[()<>\\|?*+\[\]]", out.replace("%", "")), f"unsupported pattern syntax: {out}"
        return "/" + out


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[Pattern]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
            continue
        assert isinstance(entry, URLPattern)
        pattern = entry.pattern
        route = prefix + str(pattern)
        if isinstance(pattern, RoutePattern):
            params = tuple(re.findall(r"<(?:[^<>:]+:)?([^<>:]+)>", route))
        else:
            assert isinstance(pattern, RegexPattern), route
            params = tuple(re.findall(r"\(\?P<(\w+)>", route))
        yield Pattern(route=route, name=entry.name or route, params=params)


PATTERNS = list(_walk(get_resolver().url_patterns))


def _valid_values(pattern: Pattern, world: World) -> dict[str, list[str]]:
    """Real values for each parameter, the first of each being its anchor (held while another one varies)."""
    runs = list(world.runs.values())
    # The kb-debate run first: its proposed KB change is the anchor of the run's mutation URL.
    run_ids = [str(world.runs["kb-debate"].pk), *(str(r.pk) for r in runs if r != world.runs["kb-debate"])]
    known = {
        "run_id": run_ids,
        "mutation_id": [str(m.pk) for m in world.mutations],
        "slug": [kb.slug for kb in world.kbs.values()],
        "arg_id": [world.arg_id],
        "action": ["pause", "step", "resume", "cancel"],
        "app_label": ["debates"],
        "object_id": [str(runs[0].pk)],
        "content_type_id": ["1"],
        "id": [str(world.moderator.pk)],
        "url": ["debates/"],
    }
    return {name: known.get(name, ["abc"]) for name in pattern.params}


def _urls(pattern: Pattern, world: World) -> tuple[list[str], list[str]]:
    """(valid URLs, hostile URLs): one parameter varies at a time, the others hold their anchor."""
    values = _valid_values(pattern, world)
    anchor = {name: candidates[0] for name, candidates in values.items()}
    valid = [pattern.url(anchor)]
    hostile = []
    for name in pattern.params:
        valid += [pattern.url({**anchor, name: v}) for v in values[name][1:]]
        hostile += [pattern.url({**anchor, name: v}) for v in HOSTILE]
    return valid, hostile


def _failure(role: str, method: str, url: str, data: Any, response: HttpResponse) -> str:
    exc_info = getattr(response, "exc_info", None)
    top = ""
    if exc_info:
        frames = traceback.format_exception(*exc_info)
        top = "".join(frames[-3:]).strip()
    shown = url if len(url) < 160 else url[:150] + f"…({len(url)} chars)"
    sample = {k: (v[:20] + "…" if len(v) > 20 else v) for k, v in list((data or {}).items())[:3]}
    return f"{method} {shown} as {role} {sample or ''} -> {response.status_code}\n{top}"


class Fuzzer:
    def __init__(self, world: World, users: dict[str, User | None]) -> None:
        self.world = world
        self.users = users
        self.clients: dict[str, Client] = {}
        for role, user in users.items():
            client = Client(raise_request_exception=False)
            if user is not None:
                client.force_login(user)
            self.clients[role] = client
        self.failures: list[str] = []
        self.requests = 0

    def send(
        self, role: str, method: str, url: str, data: dict[str, str] | None = None, htmx: bool = False
    ) -> HttpResponse:
        client = self.clients[role]
        headers = {"HX-Request": "true"} if htmx else {}
        if method == "GET":
            response = client.get(url + ("?" + urlencode(data) if data else ""), headers=headers)
        else:
            response = client.post(url, data or {}, headers=headers)
            user = self.users[role]
            if user is not None and "_auth_user_id" not in client.session:
                client.force_login(user)  # a logout or password change ended the session: keep the role
        self.requests += 1
        if response.status_code >= 500:
            self.failures.append(_failure(role, method, url, data, response))
        return response


def _refused_before_reading(response: HttpResponse) -> bool:
    """Refused by a decorator or a permission check (wrong method, not logged in, no permission): the view read
    nothing of the request, so hostile query strings and forms would only repeat this answer."""
    if response.status_code in (403, 405):
        return True
    return response.status_code == 302 and response["Location"].startswith(LOGIN_URL + "?")


def _step_key(url: str, world: World) -> str:
    """The step the run in this URL waits for. Half the hostile posts keep it (and half the hostile queries keep
    `a` a real run), so they reach the deeper parsing rather than stopping at the first unknown key."""
    for run in world.runs.values():
        if f"/runs/{run.pk}/" in url and run.awaiting:
            return str(run.awaiting[0])
    return ""


def _fuzz(pattern: Pattern, world: World, fuzzer: Fuzzer) -> None:
    valid, hostile = _urls(pattern, world)
    params = QUERY_PARAMS
    fields = [*POST_FIELDS, *world.form_fields]
    # No role here is staff: every admin page but the login answers all three with the same redirect, so one role
    # (the moderator, who also gets the admin's login form) covers the admin's URLs.
    roles = ["moderator"] if pattern.route.startswith("admin/") else ROLES
    for role in roles:
        for url in hostile:
            fuzzer.send(role, "GET", url)
            fuzzer.send(role, "POST", url)
        for i, url in enumerate(valid):
            step_key = _step_key(url, world)
            get_read = not _refused_before_reading(fuzzer.send(role, "GET", url))
            post_read = not _refused_before_reading(fuzzer.send(role, "POST", url))
            # Every value on the anchor URL; a third of them, in turn, on the other real objects.
            for n, value in enumerate(VALUES):
                if i and n % 3 != i % 3:
                    continue
                htmx = n % 2 == 1
                if get_read:
                    query = dict.fromkeys(params, value)
                    if htmx:  # a real run on one side: the comparison reads the other side's hostile id
                        query["a"] = str(world.runs["cross-examination"].pk)
                    fuzzer.send(role, "GET", url, query, htmx=htmx)
                if post_read:
                    data = dict.fromkeys(fields, value)
                    if htmx and step_key:
                        data["step_key"] = step_key
                    fuzzer.send(role, "POST", url, data, htmx=htmx)


@pytest.fixture
def fuzzer(world: World) -> Fuzzer:
    return Fuzzer(world, {"anonymous": None, "viewer": world.viewer, "moderator": world.moderator})


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.route)
def test_no_url_answers_a_server_error(pattern: Pattern, world: World, fuzzer: Fuzzer) -> None:
    _fuzz(pattern, world, fuzzer)
    if fuzzer.failures:
        shown = "\n\n".join(fuzzer.failures[:5])
        pytest.fail(
            f"{len(fuzzer.failures)} of {fuzzer.requests} requests answered 500:\n{shown}", pytrace=False
        )


def test_the_walk_covers_every_app() -> None:
    routes = {p.route for p in PATTERNS}
    for route in ("runs/<id:run_id>/", "kb/<slug:slug>/", "accounts/login/", "admin/"):
        assert route in routes
    # Every id in a path is bounded (debates.web.converters): no `<int:...>` is left.
    assert not [r for r in routes if "<int:" in r]


def test_the_websocket_route_takes_only_ids_that_fit_the_database() -> None:
    from debates.web.routing import websocket_urlpatterns

    route = websocket_urlpatterns[0]
    match = route.resolve("ws/runs/42/")
    assert match is not None and match.kwargs == {"run_id": 42}
    for value in (str(10**23), str(2**63), "-1", "abc"):
        assert route.resolve(f"ws/runs/{value}/") is None
