"""The systemd units in deploy/ (README "Running under systemd"): each starts a command this project has, with
options that command accepts, is restarted whenever it exits and is never given up on, and reads the documented
environment file."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import load_command_class

DEPLOY = Path(settings.BASE_DIR) / "deploy"
UNITS = ["disputa-web.service", "disputa-worker@.service"]


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  (systemd keys are case-sensitive)
    parser.read(DEPLOY / name, encoding="utf-8")
    return parser


@pytest.mark.parametrize("name", UNITS)
def test_a_unit_runs_a_command_of_this_project_with_options_it_accepts(name):
    argv = shlex.split(unit(name)["Service"]["ExecStart"].replace("%i", "1").replace("%H", "host"))
    assert argv[1] == "manage.py"
    command = load_command_class("debates", argv[2])
    command.create_parser("manage.py", argv[2]).parse_args(argv[3:])  # exits (fails the test) on a bad option


@pytest.mark.parametrize("name", UNITS)
def test_a_unit_is_restarted_whenever_it_exits_and_never_given_up_on(name):
    parsed = unit(name)
    assert parsed["Service"]["Restart"] == "always"
    assert parsed["Unit"]["StartLimitIntervalSec"] == "0"
    assert parsed["Unit"]["PartOf"] == "disputa.target"
    assert parsed["Service"]["EnvironmentFile"] == "/etc/disputa/disputa.env"


def test_the_example_environment_names_the_scaled_setup():
    lines = (DEPLOY / "disputa.env.example").read_text(encoding="utf-8").splitlines()
    names = {line.split("=", 1)[0] for line in lines if line and not line.startswith("#")}
    assert {"DATABASE_URL", "REDIS_URL", "DISPUTA_TASKS_BACKEND", "DJANGO_SECRET_KEY"} <= names
