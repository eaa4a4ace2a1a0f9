"""Load the Workspace Data API into DuckDB with dlt: one table per resource (calls, prospects,
lists, users, activities) in the dataset `workspace_api`. The pipeline's state is kept beside
the DuckDB file, so the next run with the same file loads only what changed.

    pip install 'workspace-data-api[dlt]'    # or: pip install 'dlt[duckdb]==1.31.0'
    python integrations/dlt/load.py --base-url https://api.example.com/v1 \\
        --api-key "$KEY" --duckdb warehouse.duckdb [--dataset workspace_api]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import dlt
from workspace_api import workspace_api

PIPELINE = "workspace_api"


def pipeline_for(duckdb_file: Path, dataset: str) -> dlt.Pipeline:
    """The pipeline into `duckdb_file`, its working state in a folder beside it."""
    return dlt.pipeline(
        pipeline_name=PIPELINE,
        destination=dlt.destinations.duckdb(str(duckdb_file)),
        dataset_name=dataset,
        pipelines_dir=str(duckdb_file.parent / f".{duckdb_file.name}.dlt"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="load.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the API's base URL, ending in /v1")
    parser.add_argument("--api-key", required=True, help="an API key of the workspace")
    parser.add_argument("--duckdb", required=True, type=Path, help="the DuckDB file to load into")
    parser.add_argument("--dataset", default="workspace_api", help="default: workspace_api")
    args = parser.parse_args(argv)
    pipeline = pipeline_for(args.duckdb.resolve(), args.dataset)
    pipeline.run(workspace_api(args.base_url, args.api_key))
    counts = pipeline.last_trace.last_normalize_info.row_counts
    loaded = ", ".join(
        f"{table} {counts.get(table, 0)}"
        for table in ("calls", "prospects", "lists", "users", "activities")
    )
    print(f"loaded into {args.duckdb} ({args.dataset}): {loaded}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
