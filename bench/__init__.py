"""Benchmarks of the API's hot paths: ratios measured side by side in one run (`make bench`)."""
