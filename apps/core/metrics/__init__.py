"""Prometheus: who may scrape /metrics, and label values kept to a bounded set."""
