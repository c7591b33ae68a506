"""The 403 and 404 pages a person sees (DEBUG off, as in the tests): in the site's layout, in plain words, saying
what happened and where to go."""

from __future__ import annotations

from django.test import Client

from debates.web.views.errors import NEEDS_MODERATE


def used(response) -> list[str]:
    return [t.name for t in response.templates if t.name]


class ForbiddenTests:
    def test_a_viewer_acting_on_a_run_gets_the_403_page_pointing_back_to_the_run(
        self, viewer_client, make_run
    ):
        run = make_run()
        response = viewer_client.post(f"/runs/{run.pk}/control/pause/")
        assert response.status_code == 403
        assert "403.html" in used(response) and "base.html" in used(response)
        html = response.content.decode()
        assert "You can watch this run, but not act on it" in html
        assert "You need the moderate permission to steer a run." in html
        assert "ask an administrator to give it to your account" in html
        assert f'href="/runs/{run.pk}/"' in html and f"Back to run {run.pk}" in html
        # The site's layout: the skip link, the navigation and the main landmark.
        assert 'class="skip-link" href="#main"' in html and '<main id="main"' in html
        assert 'aria-label="Main"' in html and "view · viewer" in html

    def test_every_moderator_action_of_a_viewer_is_refused_with_the_page(self, viewer_client, make_run):
        run = make_run()
        for url, data in [
            (f"/runs/{run.pk}/control/cancel/", {}),
            (f"/runs/{run.pk}/consent/", {"approve": "yes"}),
            (f"/runs/{run.pk}/budget/", {"budget_usd": "9"}),
            (f"/runs/{run.pk}/pick/", {"pick": "A"}),
            (f"/runs/{run.pk}/human/", {}),
        ]:
            response = viewer_client.post(url, data)
            assert response.status_code == 403, url
            assert "403.html" in used(response), url
            assert f"Back to run {run.pk}" in response.content.decode(), url

    def test_an_htmx_post_of_a_viewer_is_a_403_too(self, viewer_client, make_run):
        run = make_run()
        response = viewer_client.post(f"/runs/{run.pk}/control/pause/", HTTP_HX_REQUEST="true")
        assert response.status_code == 403 and "403.html" in used(response)

    def test_a_page_only_moderators_open_says_so_without_a_run(self, viewer_client):
        response = viewer_client.get("/runs/new/")
        assert response.status_code == 403 and "403.html" in used(response)
        html = response.content.decode()
        assert "You are not allowed to do this" in html and NEEDS_MODERATE in html
        assert "Back to run" not in html and 'href="/"' in html

    def test_a_moderator_still_acts(self, moderator_client, make_run):
        run = make_run()
        response = moderator_client.post(f"/runs/{run.pk}/control/pause/", HTTP_HX_REQUEST="true")
        assert response.status_code == 200


class NotFoundTests:
    def test_a_missing_run_says_which_and_where_to_go(self, viewer_client):
        response = viewer_client.get("/runs/999999/")
        assert response.status_code == 404
        assert "404.html" in used(response) and "base.html" in used(response)
        html = response.content.decode()
        assert "There is no run 999999" in html
        assert 'href="/"' in html and 'href="/kb/"' in html
        assert '<main id="main"' in html and "view · viewer" in html

    def test_a_missing_run_of_a_sub_page_too(self, viewer_client):
        response = viewer_client.get("/runs/999999/read/")
        assert response.status_code == 404 and "There is no run 999999" in response.content.decode()

    def test_an_unknown_address_shows_it_escaped(self, viewer_client):
        response = viewer_client.get("/nowhere/<b>here</b>/")
        assert response.status_code == 404 and "404.html" in used(response)
        html = response.content.decode()
        assert "There is nothing at this address" in html
        assert "<b>here</b>" not in html and "&lt;b&gt;here&lt;/b&gt;" in html

    def test_a_missing_kb_argument_is_the_same_page(self, viewer_client):
        response = viewer_client.get("/kb/no-such-kb/")
        assert response.status_code == 404 and "404.html" in used(response)

    def test_a_visitor_who_is_not_logged_in_gets_the_page_without_the_navigation(self, db):
        response = Client().get("/nowhere/")
        assert response.status_code == 404 and "404.html" in used(response)
        html = response.content.decode()
        assert "There is nothing at this address" in html and "Log out" not in html
