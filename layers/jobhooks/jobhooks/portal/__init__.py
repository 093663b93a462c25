"""The tenant portal and tenant-bound access (docs/portal.md), in the order a visit flows:

    tokens, keys      link and session tokens: MACed claims, and the key ring that MACs them
    access_store      the access table: grants, used links, revocation epochs, ended sessions
    grants, callers   who calls: an operator, a tenant-bound IAM caller, or a portal session;
                      the gate that refuses a request without the identity its route needs
    sessions          issue a link, exchange it once for a session, verify, revoke
    authorizer        the HTTP API Lambda authorizer's decision (functions/authorizer)
    pages, assets/    the portal's static page and ES modules, and their security headers
    analytics         the tenant's job health from the analytics table, scoped to the tenant
    models, settings, context, exceptions

Nothing here logs a token or a cookie.
"""
