"""Webhook delivery: the change events pushed to the integrators' receivers, signed (Standard
Webhooks), retried on a schedule, and sent only where the operator allows (SSRF safety). It
talks to receivers as telephony/ talks to the provider; the store keeps endpoints, deliveries
and their attempts."""
