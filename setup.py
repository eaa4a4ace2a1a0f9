"""Packaging for the Workspace Data API: installs the `workspace-api` command."""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class BuildWithDefaults(build_py):
    """Also ships the checkout's config.yaml (the defaults) inside the `server` package, so that
    an installed (non-editable) package finds its defaults with no checkout beside it."""

    def run(self) -> None:
        super().run()
        defaults = Path(__file__).resolve().parent / "config.yaml"
        # Absent only where setup.py is copied alone to install the dependencies (Containerfile).
        if defaults.exists() and not self.dry_run:
            target = Path(self.build_lib) / "server" / "config.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(defaults, target)


setup(
    name="workspace-data-api",
    version="0.1.0",
    description="Self-hosted HTTP API over a dialer workspace's calling data",
    python_requires=">=3.11",
    # Each room with its subpackages (store.sqlite, store.mongo): `include` matches names exactly.
    packages=find_packages(
        include=[
            f"{room}{sub}"
            for room in (
                "server",
                "handlers",
                "store",
                "console",
                "schemas",
                "telephony",
                "webhooks",
                "demo",
                "cli",
            )
            for sub in ("", ".*")
        ]
    ),
    package_data={
        "schemas": ["*.json", "*/*.json"],
        "console": ["templates/*", "static/*"],
    },
    cmdclass={"build_py": BuildWithDefaults},
    include_package_data=True,
    install_requires=[
        # 6.5.6 fixes request smuggling; below 7 because the service relies on Tornado
        # internals that a major release may change: HTTPServerRequest._parse_body
        # (handlers/base.py), HTTP1Connection._expected_content_remaining
        # (handlers/recordings.py), IOStream._total_write_done_index (handlers/streams.py) and
        # the HTTP1ServerConnection delegate interface wrapped by server/gate.py.
        "tornado>=6.5.6,<7",
        # PyMongo's own asyncio API (AsyncMongoClient); the release the wire tier is tested with.
        "pymongo>=4.20",
        "jsonschema>=4.23",
        "pyjwt>=2.9",
        "jinja2>=3.1",
        "pyyaml>=6",
        # JSON writing (handlers/jsonio.py): 3x the standard library on the API's pages.
        "orjson>=3.10",
        "phonenumbers>=8.13",
        # IANA time zones for dialer metrics even where the OS has no tz database.
        "tzdata>=2024.1",
        "lameenc>=1.7",
        # Webhook delivery (webhooks/transport.py): keep-alive pooling, TLS verification, timeouts,
        # and a pluggable resolver, so the connection goes to the address that was checked.
        "aiohttp>=3.10,<4",
        # aiohttp's URL type: webhooks/transport.py judges a URL exactly as aiohttp parses it.
        "yarl>=1.9,<2",
        # /metrics on the metrics listener (metrics_port; server/metrics.py), imported only when
        # metrics are on; its multiprocess mode sums the workers of `serve --processes N`.
        "prometheus-client>=0.20",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-tornasync>=0.6",
            # `make test` runs each tier's files in several worker processes.
            "pytest-xdist>=3.5",
            "openapi-spec-validator>=0.7",
            "playwright>=1.45",
            "schemathesis>=4",
            "psutil>=5.9",
            # tests/telephony/test_http1.py fuzzes the provider-response parser.
            "hypothesis>=6.100",
            # tests/webhooks/test_transport.py: a test CA and a certificate for the TLS receiver.
            "trustme>=1.1",
            "ruff>=0.6",
            # tests/e2e/test_generated_clients.py: pinned, the generated code depends on them.
            "openapi-python-client==0.29.1",
            "mypy==2.4.1",
            # Type information for mypy (`make lint`) of the libraries that ship none.
            "types-PyYAML",
            "types-jsonschema",
            # tests/integrations/test_dlt.py: the dlt source, as "dlt" below.
            "dlt[duckdb]==1.31.0",
            "duckdb==2.0.1",
            # tests/webhooks: signatures verified with the Standard Webhooks reference library.
            "standardwebhooks>=1.0",
            # tests/handlers/test_provider_callbacks.py: callbacks signed and checked with the
            # provider's own RequestValidator.
            "twilio>=9",
            # tests/server/test_tracing.py: the spans, through the SDK's in-memory exporter.
            "workspace-data-api[otel]",
        ],
        # Tracing (server/tracing.py): on when OTEL_EXPORTER_OTLP_ENDPOINT is set.
        "otel": [
            "opentelemetry-sdk>=1.25",
            "opentelemetry-exporter-otlp-proto-http>=1.25",
            "opentelemetry-instrumentation-tornado>=0.46b0",
        ],
        # integrations/dlt/: the dlt source of the API and its loader into DuckDB.
        "dlt": ["dlt[duckdb]==1.31.0", "duckdb==2.0.1"],
        # `make bench` needs only psutil (also in "test"); the profilers are for chasing a miss.
        "bench": ["psutil>=5.9", "pyinstrument>=4.6", "py-spy>=0.3"],
    },
    entry_points={"console_scripts": ["workspace-api=cli:main"]},
)
