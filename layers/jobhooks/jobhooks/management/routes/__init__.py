"""The management API's routes, one Powertools `Router` per resource, included by the API
function (`functions/api/app.py`). `dependencies` holds what the routes are given per request:
the management context, the portal context and the caller.
"""
