"""Login throttling (django-axes): repeated wrong passwords for one account, or from one address, lock that
account or that address out for a while; the lockout page says so; a good login before the limit clears the count."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-1"


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password=PASSWORD)


def login(username: str, password: str, address: str = "198.51.100.7") -> int:
    response = Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": username, "password": password}
    )
    return response.status_code


def test_the_limit_is_five_failures_for_fifteen_minutes():
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60


def test_five_wrong_passwords_lock_the_account_even_against_the_right_one_and_from_elsewhere(alice):
    assert [login("alice", "wrong") for _ in range(4)] == [200] * 4  # the form again, with its error
    assert login("alice", "wrong") == 429
    response = Client(REMOTE_ADDR="203.0.113.9").post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD}
    )
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "Try again in 15 minutes" in response.content.decode()
    assert "_auth_user_id" not in response.client.session


def test_five_failures_from_one_address_lock_that_address_for_every_account(alice):
    for n in range(5):
        login(f"guess-{n}", "wrong", address="192.0.2.50")
    assert login("alice", PASSWORD, address="192.0.2.50") == 429
    assert login("alice", PASSWORD, address="192.0.2.51") == 302  # another address, the account is fine


def test_a_good_login_before_the_limit_clears_the_count(alice):
    for _ in range(4):
        login("alice", "wrong")
    assert login("alice", PASSWORD) == 302
    assert [login("alice", "wrong") for _ in range(4)] == [200] * 4


def test_a_username_longer_than_any_column_is_a_failed_login_recorded_cut_to_size(alice):
    from axes.models import AccessAttempt

    assert login("u" * 10_000, "wrong") == 200
    assert AccessAttempt.objects.get().username == "u" * 255
