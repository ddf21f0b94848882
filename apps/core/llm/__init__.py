"""LLM calls: the client (the only importer of `openai`), untrusted text in prompts, judge
fingerprints, and each key's usage and quotas."""
