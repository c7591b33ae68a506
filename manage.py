#!/usr/bin/env python
"""Django's command-line utility for Disputa."""

import os
import sys


def main() -> None:
    if sys.version_info < (3, 12):  # noqa: UP036 - python3 is 3.11 on some machines; say what to do
        sys.exit("Disputa needs Python >= 3.12 (Django 6.1). Use `bash .ci/dev manage ...`, which finds one.")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "debates.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
