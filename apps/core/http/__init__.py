"""Requests in and out: middleware, probes and error pages, the console layout every page
shares."""
