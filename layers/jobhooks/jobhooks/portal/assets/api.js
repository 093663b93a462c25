// The portal API: same origin, the session cookie sent by the browser (HttpOnly: no script
// here can read it), JSON both ways. Every change carries X-Jobhooks-Portal, a header no page
// of another site can send without a CORS preflight this API never grants.

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

const PORTAL_HEADER = "X-Jobhooks-Portal";

async function request(method, path, body, extraHeaders) {
  const headers = { Accept: "application/json", ...(extraHeaders || {}) };
  if (method !== "GET") headers[PORTAL_HEADER] = "1";
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (failure) {
    throw new ApiError(0, "network_error", "The portal could not be reached. Check your connection and try again.");
  }
  if (response.status === 204) return null;
  let document = null;
  const text = await response.text();
  if (text) {
    try {
      document = JSON.parse(text);
    } catch (failure) {
      document = null;
    }
  }
  if (!response.ok) {
    const error = (document && document.error) || {};
    // API Gateway itself answers 403 {"message": "Forbidden"} when the authorizer refuses.
    const message = error.message || (document && document.message) || response.statusText;
    throw new ApiError(response.status, error.code || `http_${response.status}`, message, error.field);
  }
  return document;
}

export const api = {
  openSession: (token) => request("POST", "/portal/session", undefined, { "X-Jobhooks-Portal-Link": token }),
  session: () => request("GET", "/portal/api/session"),
  signOut: () => request("DELETE", "/portal/api/session"),
  subscriptions: (cursor) =>
    request("GET", "/portal/api/subscriptions" + (cursor ? `?cursor=${encodeURIComponent(cursor)}` : "")),
  subscription: (id) => request("GET", `/portal/api/subscriptions/${encodeURIComponent(id)}`),
  create: (fields) => request("POST", "/portal/api/subscriptions", fields),
  update: (id, fields) => request("PATCH", `/portal/api/subscriptions/${encodeURIComponent(id)}`, fields),
  remove: (id) => request("DELETE", `/portal/api/subscriptions/${encodeURIComponent(id)}`),
  rotate: (id, graceSeconds) =>
    request("POST", `/portal/api/subscriptions/${encodeURIComponent(id)}/rotate-secret`, { grace_seconds: graceSeconds }),
  test: (id) => request("POST", `/portal/api/subscriptions/${encodeURIComponent(id)}/test`),
  recover: (id, since, cursor) =>
    request("POST", `/portal/api/subscriptions/${encodeURIComponent(id)}/recover`, cursor ? { since, cursor } : { since }),
  deliveries: (id, cursor) =>
    request(
      "GET",
      `/portal/api/subscriptions/${encodeURIComponent(id)}/deliveries?limit=20` +
        (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""),
    ),
  delivery: (id) => request("GET", `/portal/api/deliveries/${encodeURIComponent(id)}`),
  replay: (id) => request("POST", `/portal/api/deliveries/${encodeURIComponent(id)}/replay`),
  jobHealth: (days) => request("GET", `/portal/api/analytics/jobs?days=${days}`),
  alertRules: () => request("GET", "/portal/api/alerts"),
  createAlertRule: (fields) => request("POST", "/portal/api/alerts", fields),
  removeAlertRule: (id) => request("DELETE", `/portal/api/alerts/${encodeURIComponent(id)}`),
};
