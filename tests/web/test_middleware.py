"""Guards that hold for every view: a NUL character (which PostgreSQL text cannot hold) is refused up front, and a
lost database connection answers 503 with Retry-After, not 500."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, ProgrammingError
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("get", "/kb/demo/arguments/%00/", {}),
        ("get", "/runs/compare/", {"a": "1\x00"}),
        ("get", "/", {"q\x00": "x"}),
        ("post", "/accounts/login/", {"username": "alice\x00", "password": "x"}),
    ],
)
def test_a_nul_character_anywhere_in_the_address_or_fields_is_a_400_saying_so(method, path, data, viewer):
    client = Client()
    client.force_login(viewer)
    response = getattr(client, method)(path, data)
    assert response.status_code == 400
    assert "NUL character (0x00)" in response.content.decode()


def test_an_uploaded_files_bytes_are_not_judged_here(moderator):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = Client()
    client.force_login(moderator)
    response = client.post("/kb/", {"file": SimpleUploadedFile("data.json", b'{"meta": {}, "a": "\x00"}')})
    assert response.status_code == 400  # the importer's refusal, naming the file
    assert "data.json" in response.content.decode()


def lost_connection() -> OperationalError:
    """As Django raises a PostgreSQL restart: its OperationalError, psycopg's AdminShutdown as the cause."""
    error = OperationalError("terminating connection due to administrator command")
    error.__cause__ = psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    return error


def logged_in(user) -> Client:
    """A browser of `user` that gets the error page a server error answers, not the exception."""
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


class DatabaseUnavailableTests:
    def test_a_page_that_meets_a_lost_database_connection_answers_503_with_retry_after(
        self, viewer, monkeypatch
    ):
        def archive_page(*args, **kwargs):
            raise lost_connection()

        monkeypatch.setattr("debates.web.views.runs.archive_page", archive_page)
        client = logged_in(viewer)
        response = client.get("/")
        assert response.status_code == 503
        assert response["Retry-After"] == "10"
        html = response.content.decode()
        assert "This page will be back shortly" in html and "live updates resume by themselves" in html
        assert "administrator command" not in html  # nothing of the server's internals

    def test_an_error_of_the_query_itself_is_still_a_500(self, viewer, monkeypatch):
        def archive_page(*args, **kwargs):
            raise ProgrammingError('relation "debates_run" does not exist')

        monkeypatch.setattr("debates.web.views.runs.archive_page", archive_page)
        client = logged_in(viewer)
        assert client.get("/").status_code == 500

    def test_a_404_page_that_cannot_read_the_database_answers_503_too(self, viewer, monkeypatch, settings):
        """The error reached no view's handling (the 404 page's own read failed): the 500 handler answers 503."""
        settings.DEBUG = False

        def run_of(request):
            raise lost_connection()

        monkeypatch.setattr("debates.web.views.errors._run_of", run_of)
        client = logged_in(viewer)
        response = client.get("/runs/999999/")
        assert response.status_code == 503
        assert response["Retry-After"] == "10"

    def test_a_middlewares_own_database_error_answers_503(self, viewer, monkeypatch, settings):
        settings.DEBUG = False

        def process_response(self, request, response):
            raise lost_connection()

        # A middleware that reads or writes after the view (as the session middleware saves a changed session).
        monkeypatch.setattr(
            "django.contrib.messages.middleware.MessageMiddleware.process_response", process_response
        )
        client = logged_in(viewer)
        response = client.get("/")
        assert response.status_code == 503
        assert response["Retry-After"] == "10"
