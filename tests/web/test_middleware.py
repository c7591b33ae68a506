"""Guards that hold for every view: a NUL character (which PostgreSQL text cannot hold) is refused up front."""

from __future__ import annotations

import pytest
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
