"""Safe defaults: DEBUG off unless asked for, a secret key made once per installation and never shipped, and a
production environment (README "Deploying") that `check --deploy` passes without a warning."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings

README = Path(settings.BASE_DIR) / "README.md"
PROBE = "from django.conf import settings; print(settings.DEBUG); print(settings.SECRET_KEY)"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DISPUTA_", "DATABASE_URL"))}
    env.pop("REDIS_URL", None)
    return {**env, "DJANGO_SETTINGS_MODULE": "debates.settings", **extra}


def project_python(
    args: list[str], env: dict[str, str], *, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """A fresh Python process in the project's directory with exactly `env`."""
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=settings.BASE_DIR,
    )


def settings_of(env: dict[str, str]) -> tuple[str, str]:
    done = project_python(["-c", f"import django; django.setup(); {PROBE}"], env)
    assert done.returncode == 0, done.stderr
    debug, key = done.stdout.split()
    return debug, key


def test_debug_is_off_unless_django_debug_is_set(tmp_path):
    assert settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path)))[0] == "False"
    assert settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path), DJANGO_DEBUG="1"))[0] == "True"


def test_without_a_key_in_the_environment_one_is_made_private_on_first_run_and_reused(tmp_path):
    _, first = settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path)))
    key_file = tmp_path / "secret-key"
    assert key_file.read_text().strip() == first and len(first) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path)))[1] == first
    # Another installation gets another key; the environment's key wins over the file.
    assert settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path / "other")))[1] != first
    assert settings_of(clean_env(DISPUTA_VAR_DIR=str(tmp_path), DJANGO_SECRET_KEY="k" * 60))[1] == "k" * 60


def test_processes_starting_together_agree_on_one_key(tmp_path):
    env = clean_env(DISPUTA_VAR_DIR=str(tmp_path))
    with ThreadPoolExecutor(6) as pool:
        keys = {key for _, key in pool.map(lambda _: settings_of(env), range(6))}
    assert len(keys) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".secret-key")] == []


def test_no_key_is_written_in_the_code():
    source = (Path(settings.BASE_DIR) / "debates" / "settings.py").read_text()
    assert not re.search(r"SECRET_KEY\s*=\s*[\"']", source)


def deploying_environment() -> dict[str, str]:
    """The `export NAME=value` lines of the README's "Deploying" section: what an operator is told to set."""
    text = README.read_text()
    section = text.split("## Deploying", 1)[1].split("\n## ", 1)[0]
    pairs = re.findall(r"^export ([A-Z_]+)=(\S+)$", section, flags=re.MULTILINE)
    assert pairs, "the Deploying section lists no environment"
    return {name: value.strip("'\"") for name, value in pairs}


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return project_python(["manage.py", "check", "--deploy"], env, timeout=120)


def test_the_documented_production_environment_passes_check_deploy_without_a_warning(tmp_path):
    env = clean_env(DISPUTA_VAR_DIR=str(tmp_path), **deploying_environment())
    assert env.get("DISPUTA_TLS") and env.get("DJANGO_ALLOWED_HOSTS")
    done = check_deploy(env)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout, done.stdout + done.stderr


def test_check_deploy_names_what_the_laptop_defaults_lack(tmp_path):
    done = check_deploy(clean_env(DISPUTA_VAR_DIR=str(tmp_path)))
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr, done.stderr
    tls_local = check_deploy(clean_env(DISPUTA_VAR_DIR=str(tmp_path), DISPUTA_TLS="1"))
    assert "debates.W001" in tls_local.stderr and "DJANGO_ALLOWED_HOSTS" in tls_local.stderr


def test_behind_the_documented_proxy_serve_takes_the_clients_address_from_it(monkeypatch):
    """Login throttling counts addresses: behind a proxy every request would otherwise come from the proxy's."""
    from debates.management.commands.serve import proxy_header_options

    monkeypatch.delenv("DJANGO_PROXY_SSL_HEADER", raising=False)
    assert proxy_header_options() == {}  # no proxy: forwarded headers are not trusted
    monkeypatch.setenv("DJANGO_PROXY_SSL_HEADER", deploying_environment()["DJANGO_PROXY_SSL_HEADER"])
    assert proxy_header_options()["proxy_forwarded_address_header"] == "X-Forwarded-For"


def test_postgresql_connections_give_up_quickly_and_are_checked_before_use():
    """While PostgreSQL is down a page waits seconds, not half a minute (issue 25), and a pooled connection that
    died with a restart is replaced, not handed to a request."""
    probe = (
        "import django; django.setup(); from django.conf import settings; db = settings.DATABASES['default']; "
        "print(db['OPTIONS']['connect_timeout'], db['OPTIONS']['pool']['timeout'], db['CONN_HEALTH_CHECKS'])"
    )

    def probed(url: str, **extra: str) -> str:
        env = clean_env(DATABASE_URL=url, **extra)
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert probed("postgres://disputa@db.internal/disputa") == "3 5.0 True"
    assert probed("postgres://disputa@db.internal/disputa?connect_timeout=10") == "10 5.0 True"
    assert (
        probed(
            "postgres://disputa@db.internal/disputa",
            DISPUTA_DB_CONNECT_TIMEOUT="2",
            DISPUTA_DB_POOL_TIMEOUT="4",
        )
        == "2 4.0 True"
    )


def test_a_process_that_does_not_serve_pages_loads_no_web_server(tmp_path):
    """A worker, a headless debate or a command starts without Daphne's server stack (Twisted, autobahn, OpenSSL):
    about a fifth of a worker's start-up and 18 MiB of its memory. Only what serves pages (`manage.py serve`, the ASGI
    module) imports it."""
    env = clean_env(DJANGO_SECRET_KEY="x" * 50, DISPUTA_VAR_DIR=str(tmp_path))
    done = project_python(
        [
            "-c",
            "import sys, django; django.setup(); import debates.management.commands.worker, debates.engine.runner;"
            " print(sorted(m for m in ('twisted', 'autobahn', 'daphne.server') if m in sys.modules))",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_runserver_still_serves_websockets_through_daphne():
    done = project_python(["manage.py", "runserver", "--help"], clean_env(DJANGO_SECRET_KEY="x" * 50))
    assert done.returncode == 0, done.stderr
    assert "--websocket_handshake_timeout" in done.stdout  # Daphne's runserver, not Django's WSGI one
