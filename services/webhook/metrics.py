"""The webhook's metrics: controller-runtime's webhook request counter under the `flotilla_` prefix."""

from __future__ import annotations

from prometheus_client import Counter

# `webhook`: the RPC (apply, default, validate, delete; an ApplyBatch counts each object as apply or
# validate, and only a batch refused whole as applybatch); `result`: allowed, denied (answered with
# violations) or error (answered with a gRPC error status).
WEBHOOK_REQUESTS = Counter("flotilla_webhook_requests_total", "Admission requests answered by the webhook",
                           ["webhook", "result"])
