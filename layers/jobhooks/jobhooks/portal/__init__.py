"""The tenant portal (docs/portal.md), a function of its own (functions/portal), in the order a
visit flows:

    authorizer        the HTTP API Lambda authorizer's decision (functions/authorizer)
    gate              the identity each of the portal function's paths needs
    pages, assets/    the portal's static page and ES modules, and their security headers
    routes            the link-for-session exchange and the portal's API: one session, one
                      tenant, through the same tenant operations the /v1 routes call
    dependencies      what a route is given: the context, the session, the send budget
    analytics         the tenant's job health from the analytics table, scoped to the tenant
    models

Links, sessions and grants are `jobhooks.access`; nothing here logs a token or a cookie.
"""
