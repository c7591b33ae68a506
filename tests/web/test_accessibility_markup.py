"""What the accessibility of every page rests on, checked in the HTML (the browser checks are in
tests/e2e/test_accessibility.py): the skip link first, one main landmark to skip to, every table in a labelled,
focusable scroll region, and live regions that frames never replace (streaming text in none)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.test import Client

from debates.web import frames
from tests.web.world import World

pytestmark = pytest.mark.django_db

FOCUSABLE = {"a", "button", "input", "select", "textarea", "summary"}


class Page(HTMLParser):
    """The first focusable element of the body, each table's enclosing elements, the live regions and their
    ancestors."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.first_focusable: tuple[str, dict[str, str]] | None = None
        self.tables: list[list[tuple[str, dict[str, str]]]] = []
        self.live: list[list[tuple[str, dict[str, str]]]] = []
        self.mains: list[dict[str, str]] = []
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.in_body = True
        focusable = tag in FOCUSABLE and not (tag == "input" and attributes.get("type") == "hidden")
        if self.in_body and self.first_focusable is None and (focusable or "tabindex" in attributes):
            self.first_focusable = (tag, attributes)
        if tag == "table":
            self.tables.append(list(self.stack))
        if tag == "main":
            self.mains.append(attributes)
        if "aria-live" in attributes or attributes.get("role") in {"status", "log", "alert"}:
            self.live.append([*self.stack, (tag, attributes)])
        if tag not in {"input", "br", "img", "meta", "link", "hr", "wbr", "col", "source"}:
            self.stack.append((tag, attributes))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                break


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def pages(world: World) -> list[str]:
    runs = world.runs
    graph, data = world.kbs["graph"], world.kbs["data"]
    return [
        "/",
        "/runs/new/",
        "/kb/",
        "/kb/inbox/",
        "/decisions/",
        f"/kb/{graph.slug}/",
        f"/kb/{data.slug}/",
        f"/kb/{graph.slug}/arguments/{world.arg_id}/",
        f"/runs/compare/?a={runs['cross-examination'].pk}&b={runs['human-examiner'].pk}",
        f"/runs/{runs['kb-debate'].pk}/read/",
        *(f"/runs/{run.pk}/" for run in runs.values()),
    ]


def moderator(world: World) -> Client:
    client = Client()
    client.force_login(world.moderator)
    return client


def test_the_skip_link_comes_first_and_leads_to_the_main_landmark(world: World) -> None:
    client = moderator(world)
    for url in [*pages(world), "/accounts/login/", "/runs/999999/"]:
        response = client.get(url) if url != "/accounts/login/" else Client().get(url)
        page = parse(response.content.decode())
        assert page.first_focusable is not None, url
        tag, attributes = page.first_focusable
        assert (tag, attributes.get("href"), attributes.get("class")) == ("a", "#main", "skip-link"), url
        assert [m.get("id") for m in page.mains] == ["main"], url


def test_every_table_scrolls_in_a_labelled_focusable_region(world: World) -> None:
    client = moderator(world)
    checked = 0
    for url in pages(world):
        page = parse(client.get(url).content.decode())
        checked += len(page.tables)
        for ancestors in page.tables:
            regions = [a for tag, a in ancestors if "table-scroll" in a.get("class", "").split()]
            assert regions, f"{url}: a table outside a scroll region"
            region = regions[-1]
            assert region.get("role") == "region" and region.get("tabindex") == "0", url
            assert region.get("aria-label"), url
    assert checked > 20  # the archive, the KB pages, the compare page, the protocols' outcomes and panels


def test_no_live_region_is_inside_what_a_frame_replaces(world: World) -> None:
    """A live region that a frame swaps is a new element each time: it is announced over and over, or not at all.
    The run page has one, #run-announcer, outside every swapped element."""
    client = moderator(world)
    for name, run in world.runs.items():
        page = parse(client.get(f"/runs/{run.pk}/").content.decode())
        announcers = [path for path in page.live if path[-1][1].get("id") == "run-announcer"]
        assert len(announcers) == 1, name
        assert announcers[0][-1][1].get("aria-live") == "polite", name
        for path in page.live:
            swapped = [a.get("id") for _, a in path[:-1] if a.get("id") in SWAPPED or "hx-swap-oob" in a]
            if path[-1][1].get("aria-live"):
                assert not swapped, f"{name}: a live region inside {swapped}"


SWAPPED = {"run-status", "transcript", "outcome", "moderator", "cost", "integrity", "ledger", "approvals"}


def test_streaming_text_is_in_no_live_region(world: World) -> None:
    html = frames.turn_live_frame(
        key="r1/analysis/analyst-ada",
        task="analysis",
        protocol="cross-examination",
        text='{"summary": "Through the lens of economics, the',
    )
    assert "aria-live" not in html and 'aria-busy="true"' in html
    status = frames.status_frame(world.runs["human-examiner"])
    assert "aria-live" not in status and 'role="status"' not in status
