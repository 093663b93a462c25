"""Who may call, and for which tenant: tenant-bound IAM callers and portal sessions
(docs/api.md "Who may call", docs/portal.md), used by the management API and the portal alike:

    tokens, keys      link and session tokens: MACed claims, and the key ring that MACs them
    access_store      the access table: grants, used links, revocation epochs, ended sessions,
                      the tenants' send counts
    grants, callers   who calls: an operator, a tenant-bound IAM caller, or a portal session;
                      the management API's gate (a request without an IAM caller)
    sessions          issue a link, exchange it once for a session, verify, revoke
    limits            links' and sessions' bounds and id shape, as plain constants
    settings, context, exceptions

Nothing here logs a token or a cookie.
"""
