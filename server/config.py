"""Configuration: defaults from config.yaml, each key overridable by an environment variable."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

# The defaults: config.yaml of the checkout; an installed package carries a copy of it in
# `server/` (setup.py's build step), used when there is no checkout beside the code.
REPO_CONFIG = Path(__file__).resolve().parent.parent / "config.yaml"
PACKAGED_CONFIG = Path(__file__).resolve().parent / "config.yaml"


def default_config_path() -> Path:
    return REPO_CONFIG if REPO_CONFIG.exists() or not PACKAGED_CONFIG.exists() else PACKAGED_CONFIG


class ConfigError(Exception):
    """A configuration value is missing or unusable; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Config:
    host: str
    port: int
    processes: int
    metrics_host: str
    metrics_port: int
    mongodb_uri: str
    sqlite_path: str
    sqlite_synchronous: str
    database: str
    db_timeout_seconds: float
    secret: str
    key_cache_seconds: float
    default_region: str
    max_body_bytes: int
    idle_timeout_seconds: float
    body_timeout_seconds: float
    shutdown_timeout_seconds: float
    rate_limit_per_minute: int
    sync_settle_seconds: float
    expiry_sweep_seconds: float
    event_retention_days: float
    tombstone_retention_days: float
    recording_retention_days: float
    list_purge_batch: int
    webhook_retry_schedule: str
    webhook_disable_after_hours: float
    webhook_max_in_flight_per_endpoint: int
    webhook_allowed_networks: str
    webhook_timeout_seconds: float
    webhook_poll_seconds: float
    webhook_lease_seconds: float
    stream_stall_seconds: float
    max_streams_per_workspace: int
    provider_url: str
    provider_account_id: str
    provider_auth_token: str
    provider_connect_timeout: float
    provider_header_timeout: float
    public_base_url: str
    provider_callbacks_per_minute: int
    provider_pending_days: float
    log_level: str

    @property
    def embedded(self) -> bool:
        """True when the store is the embedded SQLite database (no MongoDB URI)."""
        return not self.mongodb_uri.startswith(("mongodb://", "mongodb+srv://"))

    @property
    def throwaway(self) -> bool:
        """True for `MONGODB_URI=memory`: a throwaway SQLite file, gone when the process ends."""
        return self.mongodb_uri == "memory"

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


def env_name(key: str) -> str:
    """The environment variable that overrides a config key."""
    return "MONGODB_URI" if key == "mongodb_uri" else "WSAPI_" + key.upper()


def _coerce(key: str, kind: type, value: Any) -> Any:
    try:
        return kind(value) if value is not None else kind()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key} ({env_name(key)}) must be a {kind.__name__}: {value!r}") from exc


def load_config(
    path: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """Read config.yaml (or `path`, or $WSAPI_CONFIG), then apply environment overrides."""
    environ = os.environ if environ is None else environ
    path = Path(path or environ.get("WSAPI_CONFIG") or default_config_path())
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from exc
    fields = {f.name: f for f in dataclasses.fields(Config)}
    unknown = set(raw) - set(fields)
    if unknown:
        raise ConfigError(f"unknown keys in {path}: {', '.join(sorted(unknown))}")
    values = {}
    for name, field in fields.items():
        value = environ.get(env_name(name), raw.get(name))
        # The annotation as written (a string: `from __future__ import annotations`).
        kind = {"int": int, "float": float, "str": str}[str(field.type)]
        values[name] = _coerce(name, kind, value)
    config = Config(**values)
    validate(config)
    return config


def validate(config: Config) -> None:
    if config.embedded and config.mongodb_uri not in ("", "memory"):
        raise ConfigError(
            "MONGODB_URI must be empty (the SQLite file at sqlite_path), 'memory' "
            "(a throwaway SQLite file) or a mongodb:// or mongodb+srv:// URI"
        )
    if config.embedded and not config.throwaway and not config.sqlite_path:
        raise ConfigError("sqlite_path (WSAPI_SQLITE_PATH) must name the database file")
    if config.sqlite_synchronous not in ("full", "normal"):
        raise ConfigError(
            "sqlite_synchronous (WSAPI_SQLITE_SYNCHRONOUS) must be full or normal, not "
            f"{config.sqlite_synchronous!r}"
        )
    if not 0 < config.port < 65536:
        raise ConfigError(f"port must be between 1 and 65535, not {config.port}")
    if config.key_cache_seconds > 5:
        raise ConfigError("key_cache_seconds must be at most 5 (revoked keys must stop within 5 s)")
    if not 0 <= config.metrics_port < 65536:
        raise ConfigError(
            f"metrics_port must be 0 (no metrics listener) or a port, not {config.metrics_port}"
        )
    if (
        config.metrics_port
        and config.metrics_port == config.port
        and (config.metrics_host == config.host)
    ):
        raise ConfigError("metrics_port must differ from port: the API never serves /metrics")
    if config.processes < 1:
        raise ConfigError("processes must be at least 1")
    if config.rate_limit_per_minute < 1:
        raise ConfigError("rate_limit_per_minute must be at least 1")
    if config.max_streams_per_workspace < 1:
        raise ConfigError("max_streams_per_workspace must be at least 1")
    if (
        min(
            config.db_timeout_seconds,
            config.idle_timeout_seconds,
            config.body_timeout_seconds,
            config.stream_stall_seconds,
        )
        <= 0
        or config.shutdown_timeout_seconds < 0
        or config.sync_settle_seconds < 0
    ):
        raise ConfigError("timeouts must be positive")
    if config.expiry_sweep_seconds <= 0:
        raise ConfigError("expiry_sweep_seconds must be positive")
    if config.event_retention_days <= 0:
        raise ConfigError("event_retention_days must be positive")
    if config.tombstone_retention_days <= 0:
        raise ConfigError("tombstone_retention_days must be positive")
    if config.recording_retention_days < 0:
        raise ConfigError(
            "recording_retention_days (WSAPI_RECORDING_RETENTION_DAYS) must be 0 (keep "
            "recordings) or a positive number of days"
        )
    if config.list_purge_batch < 1:
        raise ConfigError("list_purge_batch must be at least 1")
    if config.provider_callbacks_per_minute < 1:
        raise ConfigError("provider_callbacks_per_minute must be at least 1")
    if config.provider_pending_days <= 0:
        raise ConfigError("provider_pending_days must be positive")
    if config.public_base_url and not config.public_base_url.startswith(("http://", "https://")):
        raise ConfigError(
            "public_base_url (WSAPI_PUBLIC_BASE_URL) must be an http:// or https:// URL, such as "
            "https://api.example.com"
        )


def validate_webhooks(config: Config) -> None:
    """The webhook keys, checked when a process that delivers starts (serve, demo)."""
    from webhooks.networks import parse_networks
    from webhooks.schedule import parse_schedule

    try:
        parse_schedule(config.webhook_retry_schedule)
    except ValueError as exc:
        raise ConfigError(f"webhook_retry_schedule {exc}") from None
    try:
        parse_networks(config.webhook_allowed_networks)
    except ValueError as exc:
        raise ConfigError(
            f"webhook_allowed_networks must be comma-separated CIDRs (10.0.0.0/8,::1/128): {exc}"
        ) from None
    if config.webhook_max_in_flight_per_endpoint < 1:
        raise ConfigError("webhook_max_in_flight_per_endpoint must be at least 1")
    if min(config.webhook_disable_after_hours, config.webhook_poll_seconds) <= 0:
        raise ConfigError("webhook_disable_after_hours and webhook_poll_seconds must be positive")
    if not 0 < config.webhook_timeout_seconds < config.webhook_lease_seconds:
        raise ConfigError(
            "webhook_timeout_seconds must be positive and below webhook_lease_seconds (an "
            "attempt must end before its lease does, or another process may send it again)"
        )
