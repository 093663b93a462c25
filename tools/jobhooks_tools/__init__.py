"""The jobhooks tools: what runs on a host, never in a Lambda function.

`cli` (the `jobhooks` command), `shovel` (RabbitMQ -> SQS forwarder), `local` (`jobhooks dev`:
moto, the SQS event-source poller, the local API), `publisher` and `sample_events` (a producer
stand-in). They import the core package `jobhooks` (the Lambda layer); the layer never imports
them.
"""
