"""The webhook dispatcher of a serving process, built from the configuration: the outbound
policy (allowed networks, timeout) that both URL checks and deliveries use, and the dispatcher
loop (webhooks/dispatcher.py) started with the app and stopped with it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from server.config import Config
from store.contract import Store
from webhooks.dispatcher import Dispatcher
from webhooks.networks import parse_networks
from webhooks.schedule import parse_schedule
from webhooks.transport import Policy, Transport


def webhook_policy(config: Config) -> Policy:
    return Policy(
        allowed_networks=parse_networks(config.webhook_allowed_networks),
        timeout=config.webhook_timeout_seconds,
    )


def dispatcher(store: Store, config: Config, metrics: Any = None) -> Dispatcher:
    """A dispatcher for `store` (not started: `.start()` on the running loop); `metrics`
    (server.metrics.Metrics) counts its attempts when metrics are on."""
    return Dispatcher(
        store,
        Transport(webhook_policy(config)),
        schedule=parse_schedule(config.webhook_retry_schedule),
        settle=dt.timedelta(seconds=config.sync_settle_seconds),
        poll=config.webhook_poll_seconds,
        lease=dt.timedelta(seconds=config.webhook_lease_seconds),
        per_endpoint=config.webhook_max_in_flight_per_endpoint,
        disable_after=dt.timedelta(hours=config.webhook_disable_after_hours),
        retention=dt.timedelta(days=config.event_retention_days),
        retention_interval=config.expiry_sweep_seconds,
        observe=metrics.webhook_attempt if metrics is not None else None,
    )
