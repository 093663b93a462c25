"""Delivery: getting one webhook from the bridge to the receiver's endpoint.

`network_policy` decides which URLs and addresses the bridge may ever connect to (the SSRF
rules); `http_client` is the only code that opens outbound connections, and it asks the policy
first on every attempt. Both the management API (at subscription creation) and the deliver
function (before each POST) go through them, so no caller can skip a rule.
"""
