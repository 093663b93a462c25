"""jobhooks: Fetcher job events (RabbitMQ) to signed HTTPS webhooks."""

__version__ = "0.1.0"
