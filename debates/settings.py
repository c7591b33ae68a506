"""Disputa settings.

Everything that differs between the one-laptop setup and the scaled setup is an environment variable with a
safe single-process default (HackSoft styleguide): no DATABASE_URL means SQLite, no REDIS_URL means the in-memory
channel layer, no ANTHROPIC_API_KEY means the simulated backend.
"""

from __future__ import annotations

import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse

from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DISPUTA_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # the SQLite database and test database live here


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def secret_key_load(var_dir: Path) -> str:
    """The key in the var directory, made on first run (mode 0600) and reused: never a key shipped in the code.
    Two processes starting at once (Daphne and its workers, parallel tests) agree on one: the file appears whole
    or not at all (a private temporary file, then a hard link that fails if another process won)."""
    path = var_dir / "secret-key"
    if not path.exists():
        temporary = var_dir / f".secret-key-{os.getpid()}-{secrets.token_hex(4)}"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return path.read_text(encoding="ascii").strip()


# Off unless asked for: the debug page shows settings, paths and source to whoever triggers an error.
DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "") or secret_key_load(VAR_DIR)

ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# Behind TLS (README "Deploying"): cookies only over HTTPS, HTTP redirected, HSTS. DJANGO_PROXY_SSL_HEADER names
# the header a TLS-terminating proxy sets (e.g. X-Forwarded-Proto) so requests it forwarded count as secure.
TLS = env_bool("DISPUTA_TLS", False)
if TLS:
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
if os.environ.get("DJANGO_PROXY_SSL_HEADER"):
    SECURE_PROXY_SSL_HEADER = (
        "HTTP_" + os.environ["DJANGO_PROXY_SSL_HEADER"].upper().replace("-", "_"),
        "https",
    )

# "daphne" as an app only makes runserver serve ASGI (websockets); in every process it would load its server stack
# (Twisted, autobahn, OpenSSL): a fifth of a worker's start-up and 18 MiB of its memory. `manage.py serve` runs
# Daphne itself, so the app is there for runserver alone.
INSTALLED_APPS = [
    *(["daphne"] if sys.argv[1:2] == ["runserver"] else []),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "axes",
    "debates",
    "kb",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A view that meets a lost database connection answers 503 (Retry-After), not 500.
    "debates.web.middleware.DatabaseUnavailable",
    "debates.web.middleware.RefuseNulCharacters",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "debates.urls"
ASGI_APPLICATION = "debates.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The site's pages, then each protocol package's own templates (its page partials and form section).
        "DIRS": [BASE_DIR / "templates", *sorted((BASE_DIR / "debates" / "protocols").glob("*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "debates.web.context.needs_you",
            ],
            # A protocol's template tags live in its own package: {% load <package> %} loads
            # debates/protocols/<package>/panels.py.
            "libraries": {
                panels.parent.name: f"debates.protocols.{panels.parent.name}.panels"
                for panels in sorted((BASE_DIR / "debates" / "protocols").glob("*/panels.py"))
            },
        },
    },
]


def database_from_env() -> dict[str, object]:
    url = os.environ.get("DATABASE_URL", "")
    if url:
        parsed = urlparse(url)
        if parsed.scheme in {"postgres", "postgresql"}:
            from debates.platform.db_pool import connection_check  # psycopg: installed with the scaled extra

            return {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": unquote(parsed.path.lstrip("/")),
                "USER": unquote(parsed.username or ""),
                "PASSWORD": unquote(parsed.password or ""),
                "HOST": parsed.hostname or "",
                "PORT": str(parsed.port or ""),
                "CONN_MAX_AGE": 0,
                # The pool checks a connection before handing it out ("check" below): after a PostgreSQL restart
                # its idle connections are dead, and each would otherwise fail the request that drew it.
                "CONN_HEALTH_CHECKS": True,
                "OPTIONS": {
                    # While the server is down, a connection attempt fails within this many seconds (libpq's
                    # default waits for ever on a host that does not answer).
                    "connect_timeout": int(os.environ.get("DISPUTA_DB_CONNECT_TIMEOUT", "3")),
                    # libpq parameters from the query string, e.g. ?sslmode=require or, for a throwaway test
                    # server, ?options=-c%20synchronous_commit%3Doff
                    **dict(parse_qsl(parsed.query)),
                    # A pool per process (psycopg-pool): every database_sync_to_async call of a consumer or
                    # runner closes its connection, and without a pool each of them would open a new one, a
                    # PostgreSQL backend forked per call (bench fanout: seconds of lag at 500 viewers).
                    "pool": {
                        "min_size": 2,
                        "max_size": int(os.environ.get("DISPUTA_DB_POOL_SIZE", "16")),
                        # How long a request waits for a connection: while the database is unreachable, a
                        # page answers 503 after this (debates.web.middleware.DatabaseUnavailable).
                        "timeout": float(os.environ.get("DISPUTA_DB_POOL_TIMEOUT", "5")),
                        # The pool's own attempts to reconnect back off (1 s, 2 s, …) for this long, then give up
                        # until a request asks for a connection again, which starts them afresh: short, so that
                        # the pool is back within seconds of the end of an outage, however long it was.
                        "reconnect_timeout": 5,
                        # Before handing a connection out: not the pool's own check (a round trip per call),
                        # a look at its socket (debates.platform.db_pool).
                        "check": connection_check,
                    },
                },
                "TEST": {"NAME": os.environ.get("DISPUTA_TEST_DB_NAME", "test_disputa")},
            }
        if parsed.scheme == "sqlite":
            path = unquote(url.removeprefix("sqlite:///").removeprefix("sqlite://"))
        else:
            raise RuntimeError(
                f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use postgres:// or sqlite:///)"
            )
    else:
        path = str(VAR_DIR / "disputa.sqlite3")
    # The runner commits turns while a moderator posts: WAL lets readers go on during a write, IMMEDIATE takes
    # the write lock at BEGIN so two writers queue instead of failing with "database is locked" mid-transaction.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # Keep connections: the runner's database calls would otherwise reconnect (and re-run the PRAGMAs) each time.
        "CONN_MAX_AGE": None,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # A file, not :memory:, so a live Daphne process and subprocesses in tests share it.
        "TEST": {"NAME": os.environ.get("DISPUTA_TEST_DB_NAME", str(VAR_DIR / "test-disputa.sqlite3"))},
    }


DATABASES = {"default": database_from_env()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
# Messages a consumer's channel holds before the layer drops new ones (default 100): a page busy for a moment must
# not lose a burst of token deltas and events, and so fall back to replaying from the database.
CHANNEL_CAPACITY = 1000
# With Redis: channels-redis's pub/sub layer by default (one PUBLISH per group message, fanned out in each process;
# `bench fanout` measured it an order of magnitude ahead of the list-based layer, which pops every viewer's
# messages one round trip at a time). Upstream marks it beta and it loses messages while its connection is down:
# viewers replay those from the database, as they do any lost message. DISPUTA_CHANNEL_LAYER=redis chooses the
# list-based layer, for comparison only: it missed the lag target at 500 sockets and collapsed at 1,000 (README).
CHANNEL_LAYER = os.environ.get("DISPUTA_CHANNEL_LAYER", "redis-pubsub" if REDIS_URL else "inmemory")
if CHANNEL_LAYER not in {"inmemory", "redis", "redis-pubsub"}:
    raise RuntimeError(f"DISPUTA_CHANNEL_LAYER={CHANNEL_LAYER!r}: use inmemory, redis or redis-pubsub")
if CHANNEL_LAYER != "inmemory" and not REDIS_URL:
    raise RuntimeError(f"DISPUTA_CHANNEL_LAYER={CHANNEL_LAYER} needs REDIS_URL")
# Processes that share one Redis but not one database (parallel test workers) need their own prefix.
CHANNEL_PREFIX = os.environ.get("DISPUTA_CHANNEL_PREFIX", "asgi")
# redis-py 8 reads with a 5 s timeout by default, and the list-based layer blocks 5 s in BZPOPMIN: an idle viewer's
# receive then raced the timeout, and the TimeoutError that won ended its consumer (seen in bench fanout). A read
# may take the blocking time plus a margin.
CHANNEL_REDIS_HOSTS = [{"address": REDIS_URL, "socket_timeout": 15}]
if CHANNEL_LAYER == "redis-pubsub":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": CHANNEL_REDIS_HOSTS, "prefix": CHANNEL_PREFIX},
        }
    }
elif CHANNEL_LAYER == "redis":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": CHANNEL_REDIS_HOSTS, "prefix": CHANNEL_PREFIX, "capacity": CHANNEL_CAPACITY},
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "debates.platform.channel_layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY},
        }
    }

TASK_BACKENDS = {
    "inprocess": "debates.platform.task_backends.InProcessBackend",
    "immediate": "django.tasks.backends.immediate.ImmediateBackend",
    "dummy": "django.tasks.backends.dummy.DummyBackend",
    "database": "django_tasks_db.DatabaseBackend",
}
_task_backend = os.environ.get("DISPUTA_TASKS_BACKEND", "inprocess")
if _task_backend not in TASK_BACKENDS:
    raise RuntimeError(f"DISPUTA_TASKS_BACKEND={_task_backend!r}: choose one of {', '.join(TASK_BACKENDS)}")
TASKS = {"default": {"BACKEND": TASK_BACKENDS[_task_backend]}}
if _task_backend == "database":
    INSTALLED_APPS.append("django_tasks_db")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Login throttling (django-axes): five wrong passwords for one account, or from one address, lock that account or
# address out for 15 minutes (429 and a page that says so); a successful login clears the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("DISPUTA_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("DISPUTA_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# The attempted username as axes records it, cut to its column (a longer one is a failed login, not a 500).
AXES_USERNAME_CALLABLE = "debates.web.middleware.axes_username"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "run-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# "fragments": rendered HTML of finished turn cards (keyed by turn identity and the page's seq, so never stale), and
# what every websocket viewer of a run asks for at once (debates.web.frames); per process, bounded.
CACHES = {
    # Shared by all processes when there is a Redis (the websocket connect limits count there).
    "default": {
        # A Redis outage is a cache miss there, not an error (what is kept in it can be done without).
        "BACKEND": "debates.platform.redis_cache.OutageTolerantRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CHANNEL_PREFIX,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "fragments": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "disputa-fragments",
        "OPTIONS": {"MAX_ENTRIES": 20_000},
    },
}

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# No inline script or style anywhere, so no 'unsafe-inline' / 'unsafe-eval' are needed (htmx eval is off).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False

# --- Disputa ---
# API keys are read from the environment by the SDKs when a call is made; they are never copied into settings,
# the database, pages, logs or exports.
DISPUTA = {
    # The largest request body taken anywhere but the KB upload form (kb.limits): refused with 413 before it is
    # read (debates.web.request_limits). Above Django's 2.5 MB for form fields, so a long material still gets the
    # form's own message.
    "MAX_REQUEST_BYTES": int(os.environ.get("DISPUTA_MAX_REQUEST_BYTES", str(3 * 1024 * 1024))),
    # Load and abuse limits (debates.services.quotas); 0 turns one off.
    "MAX_ACTIVE_RUNS_PER_USER": int(os.environ.get("DISPUTA_MAX_ACTIVE_RUNS_PER_USER", "5")),
    "MAX_RUNS_PER_HOUR": int(os.environ.get("DISPUTA_MAX_RUNS_PER_HOUR", "30")),
    "MAX_WS_CONNECTS_PER_MINUTE": int(os.environ.get("DISPUTA_MAX_WS_CONNECTS_PER_MINUTE", "300")),
    # A runner owns a run for this long unless it renews the lease (heartbeat every third of it).
    "LEASE_SECONDS": float(os.environ.get("DISPUTA_LEASE_SECONDS", "30")),
    # Token deltas are coalesced into one live message per run (every streaming turn's text so far) this often.
    # Five a second reads as smooth streaming, and each message costs a socket write per viewer: any more often and
    # the event frames queue behind those writes (at 0.1 s, 10 debates with 50 viewers each ask 5,000 a second).
    "FLUSH_SECONDS": float(os.environ.get("DISPUTA_FLUSH_SECONDS", "0.2")),
    # A streaming turn's partial text is saved (for pages opened mid-turn) at most this often: every frame carries
    # the whole text so far, so a page's stale start is made good by the next frame; a save every frame would be a
    # database write per turn five times a second (and, on SQLite, a re-index of the turn's text).
    "PARTIAL_SAVE_SECONDS": float(os.environ.get("DISPUTA_PARTIAL_SAVE_SECONDS", "1.0")),
    # How often a running runner looks at pause / cancel requests.
    "CONTROL_POLL_SECONDS": float(os.environ.get("DISPUTA_CONTROL_POLL_SECONDS", "0.25")),
    # The run page's WebSocket (debates.web.consumers, debates.web.frames).
    # How often each viewer compares its last seq with the database's: a dropped message that ended a burst is
    # replayed within two polls instead of waiting for the run's next message.
    "GAP_POLL_SECONDS": float(os.environ.get("DISPUTA_GAP_POLL_SECONDS", "2.0")),
    # Whether the channel layer carries messages (debates.web.layer_watch): a message through it to the process's
    # own channel this often, which must come back within the timeout. While it does not, run pages say "live
    # updates interrupted" and read new events from the database every CATCH_UP_POLL_SECONDS.
    "LAYER_HEARTBEAT_SECONDS": float(os.environ.get("DISPUTA_LAYER_HEARTBEAT_SECONDS", "2.0")),
    "LAYER_HEARTBEAT_TIMEOUT_SECONDS": float(
        os.environ.get("DISPUTA_LAYER_HEARTBEAT_TIMEOUT_SECONDS", "3.0")
    ),
    "CATCH_UP_POLL_SECONDS": float(os.environ.get("DISPUTA_CATCH_UP_POLL_SECONDS", "1.0")),
    # A burst of attention wake-ups (debates.engine.attention) becomes one "Needs you" recount per page.
    "NEEDS_YOU_COALESCE_SECONDS": float(os.environ.get("DISPUTA_NEEDS_YOU_COALESCE_SECONDS", "0.5")),
    # How long an event that arrived ahead of a missing seq waits for it (parallel turns may publish out of order)
    # before the gap is replayed from the database.
    "REORDER_WAIT_SECONDS": float(os.environ.get("DISPUTA_REORDER_WAIT_SECONDS", "0.3")),
    # A run's last committed seq, read once for all of a process's viewers polling within this long.
    "COMMITTED_FRESH_SECONDS": float(os.environ.get("DISPUTA_COMMITTED_FRESH_SECONDS", "0.5")),
    # A published event's frame is kept (in the default cache) this long for viewers who missed its message.
    "EVENT_FRAME_SECONDS": int(os.environ.get("DISPUTA_EVENT_FRAME_SECONDS", "300")),
    # The status as of a seq, shared by viewers replaying up to it at about the same moment; it shows current
    # state, so it is kept briefly.
    "STATUS_FRAME_SECONDS": int(os.environ.get("DISPUTA_STATUS_FRAME_SECONDS", "5")),
    # How long a committed event may go unpublished before a replay renders it itself: sooner, replays render
    # what is about to arrive anyway and make a busy process busier.
    "UNPUBLISHED_GRACE_SECONDS": float(os.environ.get("DISPUTA_UNPUBLISHED_GRACE_SECONDS", "5")),
    "MAX_ATTEMPTS": int(os.environ.get("DISPUTA_MAX_ATTEMPTS", "3")),
    "RETRY_BACKOFF_SECONDS": float(os.environ.get("DISPUTA_RETRY_BACKOFF_SECONDS", "0.2")),
    # Simulated agents stream this many characters per second (0 = as fast as possible).
    "SIMULATED_CHARS_PER_SECOND": float(os.environ.get("DISPUTA_SIMULATED_CPS", "400")),
    # Test-only fault injection: "point:n" kills the process with SIGKILL at the n-th pass through that point.
    "CRASH_AT": os.environ.get("DISPUTA_CRASH_AT", ""),
    "RESUME_ON_START": env_bool("DISPUTA_RESUME_ON_START", True),
    # Runs whose estimated cost is above this many dollars wait for a moderator's consent before they start
    # (seed 001's cost gate); below it they are approved automatically.
    "CONSENT_THRESHOLD_USD": os.environ.get("DISPUTA_CONSENT_THRESHOLD_USD", "0.50"),
    "DEFAULT_MODEL": {"anthropic": os.environ.get("DISPUTA_ANTHROPIC_MODEL", "claude-sonnet-5-5")},
    # Seconds before an Anthropic/OpenAI call gives up, and how often the SDK itself retries 408/409/429/5xx
    # before a stream starts (a failure after the stream started is retried by the engine, MAX_ATTEMPTS).
    "API_TIMEOUT_SECONDS": float(os.environ.get("DISPUTA_API_TIMEOUT_SECONDS", "600")),
    "SDK_MAX_RETRIES": int(os.environ.get("DISPUTA_SDK_MAX_RETRIES", "2")),
    # OpenAI-compatible servers (OpenAI, Ollama, vLLM, llama.cpp server): base URL and models offered.
    # `json_schema` structured output where the server supports it; `json_object` or `none` otherwise (the
    # schema is then spelled out in the prompt); validation and repair are the same either way.
    "OPENAI_BASE_URL": os.environ.get("OPENAI_BASE_URL", ""),
    "OPENAI_MODELS": [m.strip() for m in os.environ.get("DISPUTA_OPENAI_MODELS", "").split(",") if m.strip()],
    "OPENAI_RESPONSE_FORMAT": os.environ.get("DISPUTA_OPENAI_RESPONSE_FORMAT", "json_schema"),
}

# Output length and reasoning effort per seat role ("default" for roles not listed). Thinking is billed as
# output, so `max_tokens` also caps what a turn can cost.
# Per seat role (its `role`), then per stage (`stage:<id>`), over the default: max tokens, effort and temperature.
# A temperature is sent only to models that accept one (see `temperature` in DISPUTA_PRICES: the current Anthropic
# models refuse a non-default one); seed 004 cross-examines at 0.4 so the bull and the bear do not shake hands.
DISPUTA_ROLES = {
    "default": {"max_tokens": 4096, "effort": "medium"},
    "judge": {"max_tokens": 8192, "effort": "high"},
    "examiner": {"max_tokens": 6144, "effort": "high"},
    "stage:cross": {"temperature": 0.4},
}

# USD per million tokens. Edit here, or point DISPUTA_PRICES_FILE at a JSON file of the same shape. `over` is a
# long-prompt tier: above `tokens` prompt tokens the whole request is priced at its rates.
DISPUTA_PRICES = {
    "read_on": "2026-11-22",
    "source": "https://platform.claude.com/docs/en/about-claude/pricing",
    "models": {
        "claude-sonnet-5-5": {
            "provider": "anthropic",
            "label": "Claude Sonnet 5.5",
            "temperature": False,  # a non-default temperature is refused (400)
            "input": "2",
            "cache_write_5m": "2.50",
            "cache_write_1h": "4",
            "cache_read": "0.10",
            "output": "10",
        },
        "claude-opus-5-5": {
            "provider": "anthropic",
            "label": "Claude Opus 5.5",
            "temperature": False,  # a non-default temperature is refused (400)
            "input": "4",
            "cache_write_5m": "5",
            "cache_write_1h": "8",
            "cache_read": "0.20",
            "output": "20",
        },
        "claude-haiku-5-5": {
            "provider": "anthropic",
            "label": "Claude Haiku 5.5",
            "temperature": False,  # a non-default temperature is refused (400)
            "input": "0.10",
            "cache_write_5m": "0.125",
            "cache_write_1h": "0.20",
            "cache_read": "0.01",
            "output": "0.50",
            "over": {
                "tokens": 100000,
                "input": "0.50",
                "cache_write_5m": "0.625",
                "cache_write_1h": "1.00",
                "cache_read": "0.05",
                "output": "2.50",
            },
        },
        "claude-fable-5-1": {
            "provider": "anthropic",
            "label": "Claude Fable 5.1",
            "temperature": False,  # a non-default temperature is refused (400)
            "input": "10",
            "cache_write_5m": "12.50",
            "cache_write_1h": "20",
            "cache_read": "0.25",
            "output": "50",
        },
    },
}
if os.environ.get("DISPUTA_PRICES_FILE"):
    import json as _json

    DISPUTA_PRICES = _json.loads(Path(os.environ["DISPUTA_PRICES_FILE"]).read_text(encoding="utf-8"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"debates": {"handlers": ["console"], "level": os.environ.get("DISPUTA_LOG_LEVEL", "INFO")}},
}
