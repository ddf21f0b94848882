"""The REST edge every app's API shares: errors as {"detail": ...} (handlers), the OpenAPI document
(openapi), input validation, answers built by Out models (responses, schemas), and DRF's plumbing
(negotiation, parsers, renderers, pagination)."""
