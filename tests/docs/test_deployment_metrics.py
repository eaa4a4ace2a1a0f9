"""docs/deployment.md "Metrics": its table names every metric the service exports with its type
and labels (and nothing else), and its Prometheus scrape configuration and alert rules pass
`promtool check config` and `promtool check rules` and name only metrics that exist."""

from __future__ import annotations

import re

from prometheus_client.metrics import MetricWrapperBase

from server.metrics import Metrics
from tests.docs.markdown import code, code_blocks, read, section, tables
from tests.server.metrics_helpers import promtool_check

DOC = "docs/deployment.md"


def exported() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every metric of server.metrics: name as exposed -> (type, label names)."""
    found = {}
    for metric in vars(Metrics()).values():
        if isinstance(metric, MetricWrapperBase):
            name = metric._name + ("_total" if metric._type == "counter" else "")
            found[name] = (metric._type, tuple(metric._labelnames))
    return found


def test_the_table_names_every_metric_with_its_type_and_labels():
    [table] = tables(section(read(DOC), "## Metrics"))
    documented = {}
    for row in table:
        # `a`, `b`; or a label with its values, `reason`: `x`, `y`; parts apart by semicolons.
        labels: tuple[str, ...] = ()
        for part in filter(None, row["Labels"].split(";")):
            names = re.findall(r"`(\w+)`", part)
            labels += tuple(names[:1] if ":" in part else names)
        documented[code(row["Metric"])] = (row["Type"], labels)
    assert documented == exported()
    assert all(name.startswith("wsapi_") for name in documented)


def test_the_scrape_configuration_and_alert_rules_pass_promtool(tmp_path):
    config, rules = code_blocks(section(read(DOC), "### Scraping and alerting"), "yaml")
    assert config.startswith("# prometheus.yml") and rules.startswith("# workspace-api-rules.yml")
    (tmp_path / "prometheus.yml").write_text(config)
    (tmp_path / "workspace-api-rules.yml").write_text(rules)
    output = promtool_check("rules", tmp_path / "workspace-api-rules.yml")
    assert "SUCCESS: 3 rules found" in output, output
    promtool_check("config", tmp_path / "prometheus.yml")  # reads the rule file too
    names = set(exported())
    used = set(re.findall(r"\bwsapi_\w+", rules))
    assert used and used <= names | {f"{n}_{s}" for n in names for s in ("bucket", "count", "sum")}
    assert {"wsapi_store_up", "wsapi_http_requests_total", "wsapi_webhook_backlog"} <= used
